import type { Answer } from '#client/api.ts';
import { age, renderKeyValues, renderTable, type Column } from './output.ts';
import { historyColumns, indent } from './views.ts';

// How declared maintenance looks to people: a row per maintenance, and one maintenance as a block with a row per
// machine, its deferrals and (for the provider) its history. A tenant's view has no scope, rollout or history.

export type Maintenance = Answer<'/admin/maintenance/{id}', 'get'>;
export type TenantMaintenance = Answer<'/v2/org/{org}/nico/maintenance/{id}', 'get'>;
type AnyMaintenance = Maintenance | TenantMaintenance;
type Course = AnyMaintenance['machines'][string] & { machineId: string };
type Deferral = AnyMaintenance['deferrals'][number];

const courses = (m: AnyMaintenance): Course[] => Object.entries(m.machines).map(([machineId, course]) => ({ machineId, ...course }));
const finished = (m: AnyMaintenance): number => courses(m).filter((c) => c.phase === 'returned' || c.phase === 'failed').length;
const overdue = (m: AnyMaintenance): number => courses(m).filter((c) => c.overdue).length;

/** "2026-12-11T09:00:00.000Z (in 14d)" or "(3h ago)": a deadline and how far it is. */
function when(iso: string, now = Date.now()): string {
  const ms = Date.parse(iso) - now;
  if (ms <= 0) return `${iso} (${age(iso, now)})`;
  const hours = ms / 3_600_000;
  return `${iso} (in ${hours >= 48 ? `${Math.round(hours / 24)}d` : hours >= 1.5 ? `${Math.round(hours)}h` : `${Math.max(1, Math.round(ms / 60_000))}m`})`;
}

export const maintenanceColumns: Column<AnyMaintenance>[] = [
  { header: 'id', value: (m) => m.id },
  { header: 'kind', value: (m) => m.kind },
  { header: 'category', value: (m) => m.category },
  { header: 'state', value: (m) => m.state },
  { header: 'done', value: (m) => `${finished(m)}/${Object.keys(m.machines).length}` },
  { header: 'overdue', value: (m) => overdue(m) },
  { header: 'hand back by', value: (m) => m.handBackBy },
  { header: 'reason', value: (m) => m.reason },
];

const courseColumns: Column<Course>[] = [
  { header: 'machine', value: (c) => c.machineId },
  { header: 'phase', value: (c) => c.phase },
  { header: 'org', value: (c) => c.org },
  { header: 'instance', value: (c) => c.instanceId },
  { header: 'hand back by', value: (c) => c.handBackBy },
  { header: 'handed back', value: (c) => c.handedBackAt },
  { header: 'started', value: (c) => c.startedAt },
  { header: 'returned', value: (c) => c.returnedAt },
  { header: 'overdue', value: (c) => (c.overdue ? 'yes' : 'no') },
  { header: 'message', value: (c) => c.message },
];

const deferralColumns: Column<Deferral>[] = [
  { header: 'org', value: (d) => d.org },
  { header: 'until', value: (d) => d.until },
  { header: 'state', value: (d) => d.state },
  { header: 'decided by', value: (d) => d.decidedBy },
  { header: 'reason', value: (d) => d.reason },
];

const isProviderView = (m: AnyMaintenance): m is Maintenance => 'rollout' in m;

export function renderMaintenance(m: AnyMaintenance): string {
  const provider = isProviderView(m);
  const scope = provider
    ? [...(m.scope.machineIds ?? []), ...(m.scope.racks ?? []).map((r) => `rack ${r}`), ...(m.scope.nvlinkDomains ?? []).map((d) => `domain ${d}`)]
    : [];
  const block = renderKeyValues([
    ['id', m.id],
    ['kind', m.kind],
    ['category', m.category],
    ['state', m.state],
    ['reason', m.reason],
    ['impact', m.impact],
    ...(provider
      ? ([
          ['scope', scope],
          ['rollout', `at most ${m.rollout.maxInFlight} in flight, halts after ${m.rollout.haltAfterFailures} failure(s)`],
          ['declared by', m.declaredBy],
        ] as Array<[string, unknown]>)
      : []),
    ['hand back by', when(m.handBackBy)],
    ['window', `${m.windowMinutes} minutes per machine`],
    ['machines', `${finished(m)} of ${Object.keys(m.machines).length} done, ${overdue(m)} overdue`],
    ['created', `${m.createdAt} (${age(m.createdAt)})`],
    ['completed', m.completedAt],
  ]);
  const parts = [block, `Machines:\n${indent(renderTable(courses(m), courseColumns))}`];
  if (m.deferrals.length > 0) parts.push(`Deferrals:\n${indent(renderTable(m.deferrals, deferralColumns))}`);
  if (provider && m.history && m.history.length > 0) parts.push(`History:\n${indent(renderTable(m.history, historyColumns))}`);
  return parts.join('\n\n');
}
