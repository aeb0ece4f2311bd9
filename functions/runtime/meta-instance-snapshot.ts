import { loadQuotaUsage } from '#runtime/quota-usage.ts';
import type { HeartbeatView } from '#domain/core/health.ts';
import {
  noReplacements,
  wantsMoreCandidates,
  homePlace,
  type Member,
  type MetaSnapshot,
  type ReplacementsView,
} from '#domain/meta-instances/meta-instances.ts';
import type { FaultRules } from '#domain/meta-instances/member-replacement.ts';
import type { Machine, MetaInstance } from '#domain/core/model.ts';
import type { Page } from '#store/paging.ts';
import type { AllocatablePage } from '#store/aggregates/machines.ts';
import { safetyRules, type AppContext } from '#runtime/context.ts';
import { loadFleetSize } from '#runtime/fleet-size.ts';
import { loadHeartbeatView } from '#runtime/heartbeat-view.ts';

// What one decision about a meta-instance reads: the meta-instance reconciler decides on it, and the API's
// meta-instance requests decide their first step and show members from it, without the reconciler itself.

/**
 * The meta-instance's members (the instances its record lists, read strongly consistent, whatever any index says)
 * with their machines, and the pinned machines `pinnedIds` in the same batch as the machines.
 */
export async function loadMembers(
  ctx: AppContext,
  meta: MetaInstance,
  pinnedIds: readonly string[] = [],
): Promise<{ members: Member[]; pinned: Map<string, Machine | null> }> {
  const read = meta.memberIds.length > 0 ? await ctx.store.getRecords({ instances: meta.memberIds }) : undefined;
  const instances = meta.memberIds.flatMap((id) => read?.instances.get(id) ?? []);
  const ids = [...new Set([...instances.map((i) => i.machineId), ...pinnedIds])];
  const machines = ids.length > 0 ? await ctx.store.getMachines(ids) : new Map<string, Machine>();
  return {
    members: instances.map((instance) => ({ instance, machine: machines.get(instance.machineId) ?? null })),
    pinned: new Map(pinnedIds.map((id) => [id, machines.get(id) ?? null])),
  };
}

/** The site's replacements record, and which of its instances are still Provisioning: what the cap counts. */
export async function loadReplacements(ctx: AppContext): Promise<ReplacementsView> {
  const record = (await ctx.store.getRecords({ replacements: true })).replacements ?? null;
  if (!record || record.instanceIds.length === 0) return { record, inFlight: [] };
  const instances = (await ctx.store.getRecords({ instances: record.instanceIds })).instances;
  return { record, inFlight: record.instanceIds.filter((id) => instances.get(id)?.status === 'Provisioning') };
}

export async function loadPinned(ctx: AppContext, ids: string[] = []): Promise<Map<string, Machine | null>> {
  if (ids.length === 0) return new Map();
  const machines = await ctx.store.getMachines(ids);
  return new Map(ids.map((id) => [id, machines.get(id) ?? null]));
}

/** What the site's repair rules decide a reported fault on: read only for a replacement that carries the tenant's issue. */
async function loadFaultRules(ctx: AppContext): Promise<FaultRules> {
  const [safety, fleetSize] = await Promise.all([ctx.store.getSafety(), loadFleetSize(ctx)]);
  return { autoRepair: ctx.config.auto_machine_repair_plugin.enabled, safety, fleetSize, rules: safetyRules(ctx.config) };
}

/** Free machines per read of the allocatable index. */
export const CANDIDATE_PAGE = 500;
/** Most pages of its type's index one decision reads: what a group waiting for capacity costs each time it is decided. */
export const MAX_CANDIDATE_PAGES = 10;

/** One read of a machine type's allocatable index (FleetStore.allocatableMachinesPage, bound to the type). */
export type CandidateReader = (page: AllocatablePage) => Promise<Page<Machine>>;

/**
 * The free machines a decision needs, besides those the snapshot holds, read until it has them: none while it would not fail for want of them, the
 * group's own place (rack or NVLink domain) first, then the type's index page by page in the order of the places it
 * needs (racks, or NVLink domains: so they come whole and one with room is found wherever it lies) up to
 * MAX_CANDIDATE_PAGES. Pinned machines fix a together-group's place: only that place is read.
 */
export async function loadCandidates(snapshot: MetaSnapshot, read: CandidateReader): Promise<Machine[]> {
  const s: MetaSnapshot = { ...snapshot, candidates: [...snapshot.candidates] };
  const seen = new Set<string>(s.candidates.map((m) => m.id));
  const add = (machines: Machine[]) => {
    for (const machine of machines) {
      if (seen.has(machine.id)) continue;
      seen.add(machine.id);
      s.candidates.push(machine);
    }
  };
  if (!wantsMoreCandidates(s)) return s.candidates;
  const home = homePlace(s);
  if (home !== undefined) {
    add((await read({ ...home, limit: CANDIDATE_PAGE })).items);
    if (s.meta.machineIds?.length || !wantsMoreCandidates(s)) return s.candidates;
  }
  const order = s.meta.placement.sameNvlinkDomain ? { byNvlinkDomain: true } : {};
  let nextToken: string | undefined;
  for (let reads = 0; reads < MAX_CANDIDATE_PAGES; reads++) {
    const page = await read({ ...order, limit: CANDIDATE_PAGE, nextToken });
    add(page.items);
    nextToken = page.nextToken;
    if (!nextToken || !wantsMoreCandidates(s)) break;
  }
  return s.candidates;
}

/**
 * Everything one decision about the meta-instance reads; `members` is given for a meta-instance not stored yet,
 * `heartbeat` when the caller read it already (with the meta-instance, in one request).
 */
export async function loadMetaSnapshot(ctx: AppContext, meta: MetaInstance, members?: Member[], heartbeat?: HeartbeatView): Promise<MetaSnapshot> {
  const rules = ctx.config.meta_instance;
  const live = meta.status !== 'Deleting' && meta.status !== 'Deleted';
  const pinnedIds = live ? (meta.machineIds ?? []) : [];
  const [loaded, replacements] = await Promise.all([
    members ? loadPinned(ctx, pinnedIds).then((pinned) => ({ members, pinned })) : loadMembers(ctx, meta, pinnedIds),
    live ? loadReplacements(ctx) : noReplacements,
  ]);
  const faults = live && meta.memberReplacements?.some((r) => r.issue) ? await loadFaultRules(ctx) : undefined;
  const snapshot: MetaSnapshot = {
    meta,
    ...(faults ? { faults } : {}),
    members: loaded.members,
    replacements,
    candidates: [],
    pinned: loaded.pinned,
    heartbeat: heartbeat ?? (await loadHeartbeatView(ctx)),
    usage: live ? await loadQuotaUsage(ctx, meta.org, meta.machineType) : null,
    now: ctx.clock.now(),
    rules: {
      maxConsecutiveFailures: rules.max_consecutive_failures,
      backoffBaseMs: rules.backoff_base_seconds * 1000,
      backoffMaxMs: rules.backoff_max_seconds * 1000,
      maxReplacementsInFlight: rules.max_replacements_in_flight,
    },
    newInstance: () => {
      const id = ctx.ids.next('i');
      return { id, org: meta.org, name: id, labels: meta.labels, clientToken: ctx.ids.next('ct'), createdBy: `meta-instance:${meta.id}` };
    },
  };
  // The org's reserved machines first, then the shared pool for what they leave wanting.
  snapshot.candidates = await loadCandidates(snapshot, (page) => ctx.store.allocatableMachinesPage(meta.machineType, { ...page, reservedFor: meta.org }));
  snapshot.candidates = await loadCandidates(snapshot, (page) => ctx.store.allocatableMachinesPage(meta.machineType, page));
  return snapshot;
}
