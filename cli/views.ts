import type { instanceView } from '#domain/instances.ts';
import type { MachineView } from '#domain/machines.ts';
import type { metaInstanceView } from '#domain/meta-instances.ts';
import type { HealthOverride } from '#domain/model.ts';
import { age, formatLabels, renderKeyValues, renderTable, type Column } from './output.ts';

// How the API's objects look to people (API.md "Objects"). JSON output prints them unchanged. The types are the
// views the API answers with (type imports only: the CLI runs none of the domain's code).

export type { HealthOverride };
export type Machine = MachineView;
export type Instance = ReturnType<typeof instanceView>;
export type MetaInstance = ReturnType<typeof metaInstanceView>;

const sources = (m: Machine) => m.healthOverrides.map((o) => o.source);

export const machineColumns: Column<Machine>[] = [
  { header: 'id', value: (m) => m.id },
  { header: 'type', value: (m) => m.machineType },
  { header: 'rack', value: (m) => m.rack },
  { header: 'state', value: (m) => m.state },
  { header: 'instance', value: (m) => m.instanceId },
  { header: 'allocatable', value: (m) => (m.allocatable ? 'yes' : 'no') },
  { header: 'overrides', value: sources },
  { header: 'heartbeat', value: (m) => age(m.lastHeartbeatAt) },
];

const overrideColumns: Column<HealthOverride>[] = [
  { header: 'source', value: (o) => o.source },
  { header: 'mode', value: (o) => o.mode },
  { header: 'alerts', value: (o) => o.alerts.map((a) => a.id) },
  { header: 'classifications', value: (o) => [...new Set(o.alerts.flatMap((a) => a.classifications))] },
  { header: 'issue', value: (o) => (o.issue ? `${o.issue.category}: ${o.issue.summary}` : undefined) },
  { header: 'created', value: (o) => `${age(o.createdAt)} by ${o.createdBy}` },
  { header: 'message', value: (o) => o.alerts[0]?.message },
];

export const renderOverrides = (overrides: HealthOverride[]): string =>
  overrides.length === 0 ? 'no health overrides' : renderTable(overrides, overrideColumns);

export function renderMachine(m: Machine): string {
  const block = renderKeyValues([
    ['id', m.id],
    ['type', m.machineType],
    ['rack', m.rack],
    ['state', m.state],
    ['instance', m.instanceId],
    ['allocatable', m.allocatable ? 'yes' : `no (${m.notAllocatableReasons.join(', ')})`],
    ['last heartbeat', m.lastHeartbeatAt ? `${m.lastHeartbeatAt} (${age(m.lastHeartbeatAt)})` : undefined],
    ...(m.cleanup ? ([['cleanup', `${m.cleanup.phase}, ${m.cleanup.attempts} attempt(s)${m.cleanup.error ? `: ${m.cleanup.error}` : ''}`]] as Array<[string, unknown]>) : []),
    ['labels', formatLabels(m.labels)],
    ['version', m.version],
  ]);
  return `${block}\n\nHealth overrides:\n${indent(renderOverrides(m.healthOverrides))}`;
}

export const renderLabels = (labels: Record<string, string>): string =>
  Object.keys(labels).length === 0
    ? 'no labels'
    : renderTable(Object.entries(labels), [
        { header: 'key', value: ([k]) => k },
        { header: 'value', value: ([, v]) => v },
      ]);

export const instanceColumns: Column<Instance>[] = [
  { header: 'id', value: (i) => i.id },
  { header: 'name', value: (i) => i.name },
  { header: 'status', value: (i) => i.status },
  { header: 'type', value: (i) => i.machineType },
  { header: 'machine', value: (i) => i.machineId },
  { header: 'meta-instance', value: (i) => i.metaInstanceId },
  { header: 'created', value: (i) => age(i.createdAt) },
];

export const renderInstance = (i: Instance): string =>
  renderKeyValues([
    ['id', i.id],
    ['name', i.name],
    ['org', i.org],
    ['status', i.status],
    ...(i.failureReason ? ([['failure', i.failureReason]] as Array<[string, unknown]>) : []),
    ['machine', i.machineId],
    ['type', i.machineType],
    ['meta-instance', i.metaInstanceId],
    ['site name', i.siteName],
    ['create attempts', i.createAttempts],
    ['labels', formatLabels(i.labels)],
    ['created', `${i.createdAt} (${age(i.createdAt)})`],
    ['updated', `${i.updatedAt} (${age(i.updatedAt)})`],
  ]);

export const metaInstanceColumns: Column<MetaInstance>[] = [
  { header: 'id', value: (m) => m.id },
  { header: 'status', value: (m) => m.status },
  { header: 'type', value: (m) => m.machineType },
  { header: 'nodes', value: (m) => `${m.instanceIds.length}/${m.minNodes}` },
  { header: 'same rack', value: (m) => (m.placement.sameRack ? 'yes' : 'no') },
  { header: 'failures', value: (m) => m.consecutiveFailures },
  { header: 'error', value: (m) => m.placementError ?? m.lastFailureError },
];

export const renderMetaInstance = (m: MetaInstance): string =>
  renderKeyValues([
    ['id', m.id],
    ['org', m.org],
    ['status', m.status],
    ['type', m.machineType],
    ['nodes', `${m.instanceIds.length} of ${m.minNodes}`],
    ['machines', m.machineIds],
    ['same rack', m.placement.sameRack ? 'yes' : 'no'],
    ['instances', m.instanceIds],
    ['failures', m.consecutiveFailures],
    ['last failure', m.lastFailureError],
    ['placement error', m.placementError],
    ['next attempt', m.nextAttemptAt],
    ['labels', formatLabels(m.labels)],
    ['created', `${m.createdAt} (${age(m.createdAt)})`],
  ]);

export const indent = (text: string, by = '  '): string =>
  text
    .split('\n')
    .map((line) => by + line)
    .join('\n');
