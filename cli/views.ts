import type { Answer, Item } from '#client/api.ts';
import { age, formatLabels, minutes, renderKeyValues, renderTable, type Column } from './output.ts';

// How the API's objects look to people (API.md "Objects"). JSON output prints them unchanged. The types are the
// API's answers as the generated client knows them (client/api.ts).

export type Machine = Answer<'/admin/machines/{id}', 'get'>;
export type HealthOverride = Machine['healthOverrides'][number];
type Issue = NonNullable<HealthOverride['issue']>;
export type Instance = Answer<'/v2/org/{org}/nico/instance/{id}', 'get'>;
export type MetaInstance = Answer<'/v2/org/{org}/nico/meta-instance/{id}', 'get'>;
export type HistoryEntry = Item<'/admin/machines/{id}/history'>;
export type Safety = Answer<'/admin/safety', 'get'>;
export type SafetyReset = Answer<'/admin/safety/repair-storm/reset', 'post'>;
export type FleetSummary = Answer<'/admin/fleet/summary', 'get'>;
export type Repair = Item<'/admin/repairs'>;
/** `repairs escalated`: a machine with out-for-repair and, when the automation escalated it, that history entry. */
export interface Escalation {
  machineId: string;
  machineType: string;
  rack: string;
  /** The out-for-repair override: when, by whom, its message and the issue it carries. */
  since: string;
  createdBy: string;
  message?: string;
  issue?: Issue;
  /** The RepairEscalated history entry of this episode; absent when out-for-repair was set by hand. */
  escalated?: { at: string; actor: string; message?: string; earlierReports?: unknown[] };
}

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
  // The full text of every alert is under "Health alerts": a table cell stays one short line.
  { header: 'message', value: (o) => oneLine(o.alerts[0]?.message, 60) },
];

export const renderOverrides = (overrides: HealthOverride[]): string =>
  overrides.length === 0 ? 'no health overrides' : renderTable(overrides, overrideColumns);

/** An agent message may be long or span lines: one line, cut to `max` characters (none: whole). */
const oneLine = (text: string | undefined, max = Infinity): string | undefined => {
  const flat = text?.replace(/\s+/g, ' ').trim();
  return flat && flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};

/** The site agent's health alerts on the machine (its hardware-health override), each in full. */
export function renderHealthAlerts(m: Machine): string | undefined {
  const alerts = m.healthOverrides.find((o) => o.source === 'hardware-health')?.alerts ?? [];
  if (alerts.length === 0) return undefined;
  return alerts.map((a) => `${a.id} [${a.classifications.join(', ')}]${a.message ? `: ${oneLine(a.message)}` : ''}`).join('\n');
}

export function renderMachine(m: Machine): string {
  const block = renderKeyValues([
    ['id', m.id],
    ['type', m.machineType],
    ['rack', m.rack],
    ['state', m.state],
    ['lifecycle', m.lifecycle],
    ['instance', m.instanceId],
    ['allocatable', m.allocatable ? 'yes' : `no (${m.notAllocatableReasons.join(', ')})`],
    ['last heartbeat', m.lastHeartbeatAt ? `${m.lastHeartbeatAt} (${age(m.lastHeartbeatAt)})` : undefined],
    ...(m.cleanup
      ? ([['cleanup', `${m.cleanup.phase}, ${m.cleanup.attempts} attempt(s)${m.cleanup.error ? `: ${m.cleanup.error}` : ''}`]] as Array<[string, unknown]>)
      : []),
    ['validation', m.validation ? validationLine(m.validation) : undefined],
    ['retired', m.retired ? `${m.retired.at} by ${m.retired.by}: ${m.retired.reason}` : undefined],
    ['labels', formatLabels(m.labels)],
    ['version', m.version],
  ]);
  const alerts = renderHealthAlerts(m);
  const probes = alerts ? `\n\nHealth alerts (site agent):\n${indent(alerts)}` : '';
  return `${block}\n\nHealth overrides:\n${indent(renderOverrides(m.healthOverrides))}${probes}`;
}

/** `passed (repair, standard) at ...` with the failed tests, or how long a running one has been waited for. */
export function validationLine(v: NonNullable<Machine['validation']>): string {
  const failed = (v.results ?? []).filter((r) => !r.passed).map((r) => r.test);
  const when = v.finishedAt ? `at ${v.finishedAt}` : `since ${v.requestedAt} (${age(v.requestedAt)})`;
  const notes = [...(failed.length > 0 ? [`failed: ${failed.join(', ')}`] : []), ...(v.stuckAt ? ['overran its timeout'] : [])];
  return [`${v.state} (${v.reason}, ${v.suite}) ${v.id} ${when}`, ...notes].join('; ');
}

export const renderLabels = (labels: Record<string, string>): string =>
  Object.keys(labels).length === 0
    ? 'no labels'
    : renderTable(Object.entries(labels), [
        { header: 'key', value: ([k]) => k },
        { header: 'value', value: ([, v]) => v },
      ]);

export const historyColumns: Column<HistoryEntry>[] = [
  { header: 'at', value: (h) => h.at },
  { header: 'actor', value: (h) => h.actor },
  { header: 'action', value: (h) => h.action },
  { header: 'instance', value: (h) => h.instanceId },
  { header: 'message', value: (h) => h.message ?? issueText(h.issue) },
];

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
    ['power', i.power && `${i.power.state} (last ${i.power.action} ${i.power.result}${i.power.error ? `: ${i.power.error}` : ''})`],
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
    ['ready', `${m.readyMembers} of ${m.minNodes}`],
    ['machines', m.machineIds],
    ['same rack', m.placement.sameRack ? 'yes' : 'no'],
    ['instances', m.instanceIds],
    ['replacing', m.memberReplacements?.map((r) => `${r.instanceId} (${r.reason}${r.successorId ? `, successor ${r.successorId} placed` : ''})`)],
    ['failures', m.consecutiveFailures],
    ['last failure', m.lastFailureError],
    ['placement error', m.placementError],
    ['next attempt', m.nextAttemptAt],
    ['labels', formatLabels(m.labels)],
    ['created', `${m.createdAt} (${age(m.createdAt)})`],
  ]);

const issueText = (issue: Issue | undefined) => (issue ? `${issue.category}: ${issue.summary}` : undefined);

export function renderSafety(s: Safety): string {
  const storm = s.repairStorm;
  const block = renderKeyValues([
    ['repair-storm breaker', storm.state],
    ['tripped at', storm.trippedAt ? `${storm.trippedAt} (${age(storm.trippedAt)})` : undefined],
    ['held back', `${storm.heldBack.length} machine(s)`],
    ['replacements in flight', s.replacementsInFlight],
  ]);
  if (storm.heldBack.length === 0) return block;
  return `${block}\n\nHeld back (quarantined, repair request not applied):\n${indent(storm.heldBack.join('\n'))}`;
}

export function renderSafetyReset(r: SafetyReset, applyHeldBack: boolean): string {
  const skipped = r.heldBackAtReset.filter((id) => !r.applied.includes(id));
  return renderKeyValues([
    ['repair-storm breaker', `reset, now ${r.repairStorm.state}`],
    ['held back at reset', r.heldBackAtReset.length === 0 ? 'none' : r.heldBackAtReset],
    [
      'repair requests applied',
      r.applied.length > 0
        ? r.applied
        : applyHeldBack || r.heldBackAtReset.length === 0
          ? 'none'
          : 'none (add --apply-held-back to apply them; the machines stay quarantined)',
    ],
    ...(applyHeldBack && skipped.length > 0
      ? ([['not applied', `${skipped.join(',')} (no longer quarantined, escalated or already in repair)`]] as Array<[string, unknown]>)
      : []),
    ['replacements in flight', r.replacementsInFlight],
  ]);
}

export const repairColumns: Column<Repair>[] = [
  { header: 'machine', value: (r) => r.machineId },
  { header: 'stage', value: (r) => r.stage },
  { header: 'since', value: (r) => r.since },
  { header: 'waiting', value: (r) => minutes(r.waitingMinutes) },
  { header: 'deadline', value: (r) => r.deadline },
  { header: 'stuck', value: (r) => (r.stuck ? 'yes' : 'no') },
];

export const escalationColumns: Column<Escalation>[] = [
  { header: 'machine', value: (e) => e.machineId },
  { header: 'type', value: (e) => e.machineType },
  { header: 'escalated', value: (e) => e.escalated?.at ?? e.since },
  { header: 'by', value: (e) => e.escalated?.actor ?? e.createdBy },
  { header: 'event', value: (e) => e.escalated?.message },
  { header: 'earlier reports', value: (e) => e.escalated?.earlierReports?.length },
  { header: 'issue', value: (e) => issueText(e.issue) },
  { header: 'message', value: (e) => e.message },
];

export const indent = (text: string, by = '  '): string =>
  text
    .split('\n')
    .map((line) => by + line)
    .join('\n');

const countsOf = (counts: Record<string, number>): string =>
  Object.entries(counts)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, count]) => `${name}=${count}`)
    .join(' ');

/** `machine summary`: the totals, then one row per type, and per NVLink domain when the summary counts them. */
export function renderSummary(summary: FleetSummary): string {
  const totals = renderKeyValues([
    ['machines', summary.machines],
    ['allocatable', summary.allocatable],
    ['stale', summary.stale],
    ['by state', countsOf(summary.byState)],
    ['by override', countsOf(summary.byOverride)],
    ['as of', summary.asOf],
  ]);
  const rows = Object.entries(summary.byType)
    .sort(([a], [b]) => a.localeCompare(b))
    .flatMap(([type, t]) => [
      { type, domain: '*', ...t, quarantined: undefined as number | undefined },
      ...Object.entries(t.byNvlinkDomain ?? {})
        .sort(([a], [b]) => a.localeCompare(b, undefined, { numeric: true }))
        .map(([domain, d]) => ({ type, domain, ...d })),
    ]);
  const domains = rows.some((r) => r.domain !== '*');
  const columns: Column<(typeof rows)[number]>[] = [
    { header: 'type', value: (r) => r.type },
    ...(domains ? [{ header: 'nvlink domain', value: (r: (typeof rows)[number]) => r.domain }] : []),
    { header: 'machines', value: (r) => r.machines },
    { header: 'allocatable', value: (r) => r.allocatable },
    ...(domains ? [{ header: 'quarantined', value: (r: (typeof rows)[number]) => r.quarantined }] : []),
  ];
  return rows.length === 0 ? totals : `${totals}\n\n${renderTable(rows, columns)}`;
}

export type Rack = Item<'/admin/fleet/racks'>;

/** The reservations holding some of a rack's machines, by id. */
const reservationsOf = (rack: Rack): string[] => [...new Set(Object.values(rack.machines).flatMap((m) => (m.reservation ? [m.reservation.id] : [])))].sort();

/** `machine racks`: one row per rack, with the NVLink domains its machines carry and the reservations holding them. */
export const rackColumns: Column<Rack>[] = [
  { header: 'type', value: (r) => r.machineType },
  { header: 'rack', value: (r) => r.rack },
  { header: 'machines', value: (r) => r.tally.machines },
  { header: 'allocatable', value: (r) => r.tally.allocatable },
  { header: 'quarantined', value: (r) => r.tally.quarantined },
  { header: 'nvlink domains', value: (r) => Object.keys(r.byNvlinkDomain ?? {}).join(' ') },
  { header: 'reservations', value: (r) => reservationsOf(r).join(' ') },
];
