import { auditEntry, auditTargets, type Requester } from '#domain/events/audit.ts';
import type { Change } from '#domain/core/change.ts';
import {
  atItsFullest,
  cancelMaintenance,
  declareMaintenance,
  decideDeferral,
  resolveScope,
  resumeMaintenance,
  withOpenList,
  type DeclareRequest,
  type Maintenance,
  type MaintenanceRules,
  type MaintenanceState,
  type OpenMaintenances,
  type ScopeCandidate,
} from '#domain/maintenance/maintenance.ts';
import { reportWork } from '#domain/maintenance/maintenance-waves.ts';
import { scopeAggregates, scopeCandidates } from '#domain/maintenance/maintenance-scope.ts';
import type { HistoryEntry } from '#domain/core/model.ts';
import { notFound, unprocessable } from '#domain/core/rejection.ts';
import { iso } from '#domain/core/time.ts';
import { validationRequired } from '#domain/repair/validation.ts';
import { validationRules, type AppContext } from '#runtime/context.ts';
import { retryOnStale } from '#runtime/retry-on-stale.ts';
import { ITEM_LIMIT_BYTES, itemSizeBytes } from '#store/item-size.ts';
import { maintenanceItem } from '#store/aggregates/maintenance-items.ts';
import type { PageRequest } from '#store/port.ts';

// The provider's side of declared maintenance: declare (recorded at once; the reconciler fans it out), list, show,
// cancel, resume, decide deferrals, and the site agent's report of one machine's work.

export const maintenanceRules = (ctx: AppContext): MaintenanceRules => ({
  minHandBackDays: ctx.config.maintenance.min_hand_back_days,
  emergencyMinHandBackMinutes: ctx.config.maintenance.emergency_min_hand_back_minutes,
  noticeHours: ctx.config.maintenance.notice_hours,
  resyncSeconds: ctx.config.maintenance.resync_seconds,
});

/** How many history entries GET /admin/maintenance/{id} shows, newest first. */
const HISTORY_SHOWN = 100;

/**
 * The machines a scope's names could mean, in one batch read: the machines named by id, and the racks' and the NVLink
 * domains' machines as the fleet summary keeps them (the catalog says which aggregates hold them).
 */
async function candidatesOf(ctx: AppContext, scope: DeclareRequest['scope']): Promise<ScopeCandidate[]> {
  const aggregates = scope.racks || scope.nvlinkDomains ? scopeAggregates(scope, await ctx.store.getCatalog()) : [];
  const read = await ctx.store.getSummaryItems(aggregates, [], scope.machineIds ?? []);
  return scopeCandidates(read.racks, read.machines.values());
}

async function openMaintenances(ctx: AppContext): Promise<{ open: OpenMaintenances | null; records: Maintenance[] }> {
  const open = await ctx.store.getOpenMaintenances();
  const records = open && open.ids.length > 0 ? [...(await ctx.store.getMaintenances(open.ids)).values()] : [];
  return { open, records };
}

const declaredEntry = (maintenance: Maintenance, by: Requester, action: string, message: string, at: string): HistoryEntry => ({
  machineId: maintenance.id,
  at,
  actor: by.actor,
  action,
  message,
});

/**
 * Records the declaration at once; the machines in scope get the override and their instances the notice from the
 * maintenance reconciler, a chunk per step. Declarations commit against the site's open list, so two that overlap
 * never both succeed.
 */
export async function declare(ctx: AppContext, request: DeclareRequest, by: Requester): Promise<Maintenance> {
  const machineIds = resolveScope(request.scope, await candidatesOf(ctx, request.scope));
  const id = ctx.ids.next('mnt');
  return retryOnStale(async () => {
    const { open, records } = await openMaintenances(ctx);
    const now = ctx.clock.now();
    const maintenance = declareMaintenance(id, request, machineIds, records, by.actor, now, maintenanceRules(ctx));
    checkFits(maintenance);
    const summary = { kind: maintenance.kind, category: maintenance.category, machines: machineIds.length, handBackBy: maintenance.handBackBy };
    const change = withOpenList<Change>(
      {
        maintenances: [{ before: null, after: maintenance }],
        history: [
          declaredEntry(
            maintenance,
            by,
            'maintenance-declared',
            `${maintenance.kind} ${maintenance.category} maintenance on ${machineIds.length} machine(s)`,
            iso(now),
          ),
        ],
        audit: auditEntry(by, now, 'maintenance-declared', auditTargets.maintenance(id), { after: summary }),
      },
      open,
    );
    await ctx.store.commit(change);
    return maintenance;
  });
}

/** 422 for a scope whose record would outgrow one item on its way (domain/maintenance/maintenance.ts atItsFullest). */
function checkFits(maintenance: Maintenance): void {
  const size = itemSizeBytes(maintenanceItem(atItsFullest(maintenance), maintenance.updatedAt));
  if (size <= ITEM_LIMIT_BYTES) return;
  const fit = Math.floor((maintenance.machineIds.length * ITEM_LIMIT_BYTES) / size);
  throw unprocessable(
    'scope-too-large',
    `the scope's ${maintenance.machineIds.length} machines would outgrow one maintenance record: declare at most about ${fit} at once`,
  );
}

export async function requireMaintenance(ctx: AppContext, id: string): Promise<Maintenance> {
  const maintenance = (await ctx.store.getMaintenances([id])).get(id);
  if (!maintenance) throw notFound(`maintenance ${id}`);
  return maintenance;
}

export async function showMaintenance(ctx: AppContext, id: string): Promise<Maintenance & { history: HistoryEntry[] }> {
  const [maintenance, history] = await Promise.all([requireMaintenance(ctx, id), ctx.store.listHistory(id, { limit: HISTORY_SHOWN })]);
  return { ...maintenance, history: history.items };
}

export const listMaintenances = (ctx: AppContext, page: PageRequest & { state?: MaintenanceState | undefined }) => ctx.store.listMaintenances(page);

/** One provider action on a maintenance: load, decide, commit with its audit entry and the open list. */
async function act(
  ctx: AppContext,
  id: string,
  by: Requester,
  action: 'maintenance-cancelled' | 'maintenance-resumed' | 'maintenance-deferral-decided',
  decide: (maintenance: Maintenance, now: Date) => Maintenance,
): Promise<Maintenance> {
  return retryOnStale(async () => {
    const [maintenance, open] = await Promise.all([requireMaintenance(ctx, id), ctx.store.getOpenMaintenances()]);
    const now = ctx.clock.now();
    const after = decide(maintenance, now);
    const change = withOpenList<Change>(
      {
        maintenances: [{ before: maintenance, after }],
        history: [declaredEntry(maintenance, by, action, `${action.replace('maintenance-', '')} by ${by.actor}`, iso(now))],
        audit: auditEntry(by, now, action, auditTargets.maintenance(id), { before: { state: maintenance.state }, after: { state: after.state } }),
      },
      open,
    );
    await ctx.store.commit(change);
    return after;
  });
}

export const cancel = (ctx: AppContext, id: string, by: Requester) => act(ctx, id, by, 'maintenance-cancelled', cancelMaintenance);

export const resume = (ctx: AppContext, id: string, by: Requester) => act(ctx, id, by, 'maintenance-resumed', resumeMaintenance);

export const decideOrgDeferral = (ctx: AppContext, id: string, org: string, decision: 'accept' | 'reject', by: Requester) =>
  act(ctx, id, by, 'maintenance-deferral-decided', (maintenance, now) => decideDeferral(maintenance, org, decision, by.actor, now));

/**
 * The site agent's report of one machine's work. A report about another maintenance than the machine's, or a
 * machine not in maintenance, changes nothing (the answer says so with `changed: false`).
 */
export async function reportMaintenanceWork(
  ctx: AppContext,
  machineId: string,
  report: { maintenanceId: string; ok: boolean; message?: string | undefined },
): Promise<{ changed: boolean; maintenance: Maintenance }> {
  return retryOnStale(async () => {
    const [found, open] = await Promise.all([
      ctx.store.getRecords({ machines: [machineId] }).then((r) => r.machines.get(machineId)),
      ctx.store.getOpenMaintenances(),
    ]);
    if (!found) throw notFound(`machine ${machineId}`);
    const maintenance = await requireMaintenance(ctx, report.maintenanceId);
    // Validated return: the work done, the machine is validated before it goes back (domain/maintenance/maintenance-waves.ts).
    const validation = validationRequired(validationRules(ctx.config), 'maintenance')
      ? { id: ctx.ids.next('v'), suite: ctx.config.validation.suite }
      : undefined;
    const change = reportWork(maintenance, found, report.ok, report.message, ctx.clock.now(), validation);
    if (!change) return { changed: false, maintenance };
    await ctx.store.commit(withOpenList(change, open));
    return { changed: true, maintenance: change.maintenances![0]!.after };
  });
}
