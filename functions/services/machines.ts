import { auditEntry, auditTargets, type AuditEntry, type Requester } from '#domain/events/audit.ts';
import { catalogAfter, uncatalogued } from '#domain/machines/catalog.ts';
import type { Change, Versioned } from '#domain/core/change.ts';
import { historyPage, machineView, registerMachine, type MachineRegistration, type MachineView } from '#domain/machines/machines.ts';
import type { HistoryEntry, Machine } from '#domain/core/model.ts';
import { bucketOf, recheck } from '#domain/machines/heartbeat.ts';
import { chunksOf, inParallel } from '#store/in-parallel.ts';
import type { Page } from '#store/paging.ts';
import { ThrottledError, type PageRequest } from '#store/port.ts';
import { validationRules, type AppContext } from '#runtime/context.ts';
import { validationRequired } from '#domain/repair/validation.ts';
import { loadHeartbeatView } from '#runtime/heartbeat-view.ts';
import { requireMachine } from '#services/instances.ts';
import { retryOnStale } from '#runtime/retry-on-stale.ts';

/** Re-described machines per transaction: each is its record and a history entry, within 100 items. */
const REGISTRATION_CHUNK = 50;
/** Registration transactions in flight at once. */
const PARALLEL_CHUNKS = 8;
/**
 * Time a registration keeps back before its request's deadline to update the catalog and answer: the chunks not
 * begun by then are left, and sending the same registration again re-describes them (the others are unchanged).
 */
export const REGISTRATION_RESERVE_MS = 3_000;

/**
 * Register or re-describe machines: the existing ones read in batches, new ones written in batches, re-described
 * ones a chunk per transaction (in parallel), then the site catalog updated once with what they changed, and the
 * roster buckets of new machines walked again so that those already in the agent's roster go live. Registering the
 * same machines again changes nothing. One audit entry counts what the call did, written with the catalog.
 */
export async function registerMachines(ctx: AppContext, registrations: MachineRegistration[], by: Requester): Promise<{ upserted: number }> {
  const stored = new Map<string, Machine>();
  const decide = async (chunk: MachineRegistration[]): Promise<Change[]> => {
    const existing = await ctx.store.getMachines(chunk.map((r) => r.id));
    for (const [id, machine] of existing) stored.set(id, machine);
    const now = ctx.clock.now();
    const commissioning = (r: MachineRegistration) =>
      !existing.has(r.id) && validationRequired(validationRules(ctx.config), 'registration')
        ? { validationId: ctx.ids.next('v'), suite: ctx.config.validation.suite }
        : undefined;
    return chunk.map((r) => registerMachine(existing.get(r.id) ?? null, r, by.actor, now, commissioning(r))).filter((c): c is Change => c !== null);
  };
  const byId = new Map(registrations.map((r) => [r.id, r]));
  const decided = await decide([...byId.values()]);
  const created = decided.filter((c) => c.machines![0]!.before === null);
  await ctx.store.createMachines(created.map((c) => c.machines![0]!.after));

  const redescribed = decided.filter((c) => c.machines![0]!.before !== null);
  const chunks = chunksOf(redescribed, REGISTRATION_CHUNK);
  const committed: Versioned<Machine>[] = created.flatMap((c) => c.machines!);
  const outOfTime = () => ctx.deadline !== undefined && ctx.deadline - Date.now() < REGISTRATION_RESERVE_MS;
  let leftForNextCall = 0;
  await inParallel(chunks, PARALLEL_CHUNKS, async (chunk) => {
    if (outOfTime()) {
      leftForNextCall += chunk.length;
      return;
    }
    const ids = chunk.map((c) => c.machines![0]!.after.id);
    let changes = chunk;
    let first = true;
    await retryOnStale(async () => {
      // The batch read serves the first attempt; after a lost race (a rival changed one), decide again.
      if (!first) changes = await decide(ids.map((id) => byId.get(id)!));
      first = false;
      if (changes.length > 0) await ctx.store.commit({ machines: changes.flatMap((c) => c.machines ?? []), history: changes.flatMap((c) => c.history) });
    });
    committed.push(...changes.flatMap((c) => c.machines ?? []));
  });
  const committedIds = new Set(committed.map((c) => c.after.id));
  const unchanged = [...stored.values()].filter((m) => !committedIds.has(m.id));
  const added = created.length;
  const counts = { added, updated: committed.length - added, unchanged: byId.size - committed.length };
  await updateCatalog(ctx, committed, unchanged, auditEntry(by, ctx.clock.now(), 'machines-registered', auditTargets.registration, { after: counts }));
  await recheckRosterBuckets(
    ctx,
    created.map((c) => c.machines![0]!.after.id),
  );
  // Only a store slowed down by throttles makes a registration run out of time: the same answer, and the same cure.
  if (leftForNextCall > 0) throw new ThrottledError(`${leftForNextCall} machines not re-described before the deadline; registering again finishes them`);
  return { upserted: committed.length };
}

/**
 * Once for the whole registration. Not in the machines' transactions: it would make them contend on one record. A
 * crash between them leaves the catalog short of those machines; registering them again, unchanged, counts them.
 * Nothing changed and nothing missing: nothing written, not even the audit entry.
 */
async function updateCatalog(ctx: AppContext, committed: Versioned<Machine>[], unchanged: Machine[], audit: AuditEntry): Promise<void> {
  await retryOnStale(async () => {
    const catalog = await ctx.store.getCatalog();
    const missing = uncatalogued(catalog, unchanged);
    if (committed.length === 0 && missing.length === 0) return;
    const next = catalogAfter(catalog, [...committed, ...missing]);
    const stored = catalog.version === 0 && Object.keys(catalog.types).length === 0 ? null : catalog;
    await ctx.store.commit({ ...(next ? { catalog: { before: stored, after: next } } : {}), audit, history: [] });
  });
}

/** New machines may already be in the agent's roster: their buckets are walked again (those stored; others hold nobody). */
async function recheckRosterBuckets(ctx: AppContext, newMachineIds: string[]): Promise<void> {
  const bucketIds = [...new Set(newMachineIds.map(bucketOf))];
  if (bucketIds.length === 0) return;
  await Promise.all(
    bucketIds.map((id) =>
      retryOnStale(async () => {
        const bucket = (await ctx.store.getRosterBuckets([id])).get(id);
        if (bucket) await ctx.store.commit({ rosterBuckets: [{ before: bucket, after: recheck(bucket, ctx.clock.now()) }], history: [] });
      }),
    ),
  );
}

export interface MachineFilter {
  state?: Machine['state'] | undefined;
  machineType?: string | undefined;
  healthOverride?: string | undefined;
  allocatable?: boolean | undefined;
}

const matches = (view: MachineView, filter: MachineFilter): boolean =>
  (filter.state === undefined || view.state === filter.state) &&
  (filter.machineType === undefined || view.machineType === filter.machineType) &&
  (filter.healthOverride === undefined || view.healthOverrides.some((o) => o.source === filter.healthOverride)) &&
  (filter.allocatable === undefined || view.allocatable === filter.allocatable);

/** The provider's fleet listing; filters apply to each page (a page may hold fewer than `limit` matches). */
export async function listMachines(
  ctx: AppContext,
  page: { limit: number; nextToken?: string | undefined },
  filter: MachineFilter,
): Promise<Page<MachineView>> {
  const heartbeat = await loadHeartbeatView(ctx);
  const now = ctx.clock.now();
  // Repair tenants poll for repair requests: that listing comes from its own index, not a walk of the fleet.
  const result = filter.healthOverride === 'repair-request' ? await ctx.store.machinesAwaitingRepair(page) : await ctx.store.listMachines(page);
  return { items: result.items.map((m) => machineView(m, heartbeat, now)).filter((v) => matches(v, filter)), nextToken: result.nextToken };
}

/** The machine's history, newest first; its registration entry comes from the record (see Machine.registered). */
export async function machineHistory(ctx: AppContext, id: string, page: PageRequest): Promise<Page<HistoryEntry>> {
  const machine = await requireMachine(ctx, id);
  return historyPage(machine, await ctx.store.listHistory(id, page));
}

export async function showMachine(ctx: AppContext, id: string): Promise<MachineView> {
  const machine = await requireMachine(ctx, id);
  return machineView(machine, await loadHeartbeatView(ctx), ctx.clock.now());
}
