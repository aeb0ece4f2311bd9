import { Command } from 'commander';
import { historyNewestFirst } from '../history.ts';
import { renderTable } from '../output.ts';
import { action, parsePositiveInt, type Runtime, type RuntimeDeps } from '../runtime.ts';
import { escalationColumns, repairColumns, type Escalation, type HistoryEntry, type Machine } from '../views.ts';

// `fleetward repairs list|escalated` (provider): machines with a repair request, where each is and how long it has
// waited (GET /admin/repairs, `--stuck` for those past their SLA), and machines the automation sent out for
// repair (the `out-for-repair` override and its RepairEscalated history entry).

const OUT_FOR_REPAIR = 'out-for-repair';
const HISTORY_PAGE = 100;
/** History lookups in flight at once for `repairs escalated`. */
const PARALLEL = 8;

/**
 * The RepairEscalated entry of the machine's current out-for-repair episode: history is newest first, so read
 * pages only until the entries are older than the override.
 */
async function escalationEntry(rt: Runtime, machineId: string, since: string): Promise<HistoryEntry | undefined> {
  for await (const entry of historyNewestFirst(rt.client, machineId, HISTORY_PAGE)) {
    if (entry.at < since) return undefined;
    if (entry.action === 'event-emitted' && entry.message === 'RepairEscalated') return entry;
  }
  return undefined;
}

async function escalation(rt: Runtime, m: Machine): Promise<Escalation | undefined> {
  const override = m.healthOverrides.find((o) => o.source === OUT_FOR_REPAIR);
  if (!override) return undefined; // changed between the list and now
  const entry = await escalationEntry(rt, m.id, override.createdAt);
  const earlierReports = entry?.event?.detail.earlierReports as NonNullable<Escalation['escalated']>['earlierReports'];
  return {
    machineId: m.id,
    machineType: m.machineType,
    rack: m.rack,
    since: override.createdAt,
    createdBy: override.createdBy,
    ...(override.alerts[0]?.message ? { message: override.alerts[0].message } : {}),
    ...(override.issue ? { issue: override.issue } : {}),
    ...(entry
      ? { escalated: { at: entry.at, actor: entry.actor, ...(entry.message ? { message: entry.message } : {}), ...(earlierReports ? { earlierReports } : {}) } }
      : {}),
  };
}

async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

export function repairsCommand(deps: RuntimeDeps): Command {
  const repairs = new Command('repairs').description('repairs in progress, stuck repairs and escalated machines (provider)');

  repairs
    .command('list')
    .description('machines with a repair request: stage (unclaimed or in-repair), since when, how long they waited, their deadline, stuck')
    .option('--stuck', 'only repairs past their deadline ([repair_sla] claim_minutes, repair_hours or the repair_eta label)')
    .option('--limit <n>', 'at most this many (default: all)', parsePositiveInt)
    .action(
      action(deps, async (rt, _args, o: { stuck?: boolean; limit?: number }) => {
        const items = await rt.client.list('/admin/repairs', { params: { query: { stuck: o.stuck ? 'true' : undefined } } }, o.limit);
        rt.out.result({ items }, () => (items.length === 0 ? (o.stuck ? 'no stuck repairs' : 'no repairs') : renderTable(items, repairColumns)));
      }),
    );

  repairs
    .command('escalated')
    .description('machines out for repair: when and why, and the RepairEscalated entry when the automation escalated them')
    .option('--limit <n>', 'at most this many (default: all)', parsePositiveInt)
    .action(
      action(deps, async (rt, _args, o: { limit?: number }) => {
        const machines = await rt.client.list('/admin/machines', { params: { query: { healthOverride: OUT_FOR_REPAIR } } }, o.limit);
        const items = (await mapLimit(machines, PARALLEL, (m) => escalation(rt, m))).filter((e): e is Escalation => e !== undefined);
        rt.out.result({ items }, () => (items.length === 0 ? 'no machines out for repair' : renderTable(items, escalationColumns)));
      }),
    );

  return repairs;
}
