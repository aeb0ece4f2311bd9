import { inAllocatableIndex } from '#domain/health.ts';
import {
  assertSatisfiable,
  deleteMetaInstance as decideDelete,
  metaInstanceView,
  newMetaInstance,
  reconcileMetaInstance,
  type Member,
  type MetaInstanceRequest,
  type MetaSnapshot,
} from '#domain/meta-instances.ts';
import type { Machine, MetaInstance, Principal } from '#domain/model.ts';
import { notFound } from '#domain/rejection.ts';
import type { Page } from '#store/paging.ts';
import type { AppContext } from './context.ts';
import { loadHeartbeatView } from './heartbeat-view.ts';
import { committedOnce, retryOnStale } from './retry-on-stale.ts';

/** Passes of one reconcile run; each commits one decision. A run that does not settle is finished by the next trigger. */
const MAX_PASSES = 6;

async function loadMembers(ctx: AppContext, metaInstanceId: string): Promise<Member[]> {
  const instances = await ctx.store.membersOf(metaInstanceId);
  return Promise.all(instances.map(async (instance) => ({ instance, machine: await ctx.store.getMachine(instance.machineId) })));
}

async function loadPinned(ctx: AppContext, ids: string[] = []): Promise<Map<string, Machine | null>> {
  return new Map(await Promise.all(ids.map(async (id) => [id, await ctx.store.getMachine(id)] as const)));
}

async function snapshot(ctx: AppContext, meta: MetaInstance, members?: Member[]): Promise<MetaSnapshot> {
  const rules = ctx.config.meta_instance;
  const live = meta.status !== 'Deleting' && meta.status !== 'Deleted';
  return {
    meta,
    members: members ?? (await loadMembers(ctx, meta.id)),
    candidates: live ? await ctx.store.allocatableMachines(meta.machineType, 500) : [],
    pinned: await loadPinned(ctx, live ? meta.machineIds : []),
    heartbeat: await loadHeartbeatView(ctx),
    now: ctx.clock.now(),
    rules: {
      maxConsecutiveFailures: rules.max_consecutive_failures,
      backoffBaseMs: rules.backoff_base_seconds * 1000,
      backoffMaxMs: rules.backoff_max_seconds * 1000,
      maxReplacementsInFlight: rules.max_replacements_in_flight,
      replacementsInFlight: live ? await ctx.store.replacementsInFlight() : 0,
    },
    newInstance: () => {
      const id = ctx.ids.next('i');
      return { id, org: meta.org, name: id, labels: meta.labels, clientToken: ctx.ids.next('ct'), createdBy: `meta-instance:${meta.id}` };
    },
  };
}

/** Bring one meta-instance in line with its spec: failed members out and counted, replacements placed. */
export async function reconcileMeta(ctx: AppContext, id: string): Promise<void> {
  for (let pass = 0; pass < MAX_PASSES; pass++) {
    const meta = await ctx.store.getMetaInstance(id);
    if (!meta) return;
    const decision = reconcileMetaInstance(await snapshot(ctx, meta));
    if (decision.kind === 'none') return;
    // Someone else may change the meta-instance or take a machine first: then the next pass decides on fresh state.
    if (await committedOnce(() => ctx.store.commit(decision.change))) {
      ctx.log.info('meta-instance reconciled', { metaInstanceId: id, outcome: decision.summary });
    }
  }
}

/** A freed machine or replacement slot wakes the meta-instances waiting for that type, longest-waiting first. */
export async function wakeWaiting(ctx: AppContext, machineType: string): Promise<void> {
  for (const meta of await ctx.store.waitingMetaInstances(machineType, 5)) await reconcileMeta(ctx, meta.id);
}

export async function wakeWaitingForMachine(ctx: AppContext, machine: Machine): Promise<void> {
  if (inAllocatableIndex(machine)) await wakeWaiting(ctx, machine.machineType);
}

export async function createMetaInstance(ctx: AppContext, principal: Principal, request: MetaInstanceRequest) {
  assertSatisfiable(request, await ctx.store.getCatalog(), await loadPinned(ctx, request.machineIds));
  const meta = newMetaInstance(ctx.ids.next('mi'), principal.org, request, principal.sub, ctx.clock.now());
  // The record and its first placement commit together: 201 comes back with instances, or Placing with the reason.
  const created = await retryOnStale(async () => {
    const decision = reconcileMetaInstance(await snapshot(ctx, meta, []));
    if (decision.kind === 'none') throw new Error('a new meta-instance always gets a first decision');
    const change = decision.change;
    change.metaInstances = (change.metaInstances ?? []).map((v) => (v.after.id === meta.id ? { before: null, after: v.after } : v));
    await ctx.store.commit(change);
    return change.metaInstances.find((v) => v.after.id === meta.id)!.after;
  });
  ctx.log.info('meta-instance created', { metaInstanceId: meta.id, machineType: meta.machineType, minNodes: meta.minNodes, status: created.status });
  return showMetaInstance(ctx, principal, meta.id);
}

async function loadOwn(ctx: AppContext, principal: Principal, id: string): Promise<MetaInstance> {
  const meta = await ctx.store.getMetaInstance(id);
  if (!meta || meta.org !== principal.org || meta.status === 'Deleted') throw notFound(`meta-instance ${id}`);
  return meta;
}

export async function showMetaInstance(ctx: AppContext, principal: Principal, id: string) {
  const meta = await loadOwn(ctx, principal, id);
  return metaInstanceView(meta, await loadMembers(ctx, id));
}

export async function deleteMetaInstance(ctx: AppContext, principal: Principal, id: string) {
  await retryOnStale(async () => {
    const meta = await loadOwn(ctx, principal, id);
    const decision = decideDelete(meta, await loadMembers(ctx, id), ctx.clock.now());
    if (decision.kind === 'commit') await ctx.store.commit(decision.change);
  });
  ctx.log.info('meta-instance delete requested', { metaInstanceId: id });
  const meta = await ctx.store.getMetaInstance(id);
  return metaInstanceView(meta!, await loadMembers(ctx, id));
}

/** A tenant's meta-instances, or (org null) every one on the site for providers. */
export async function listMetaInstances(ctx: AppContext, org: string | null, page: { limit: number; nextToken?: string | undefined }): Promise<Page<ReturnType<typeof metaInstanceView>>> {
  const result = await ctx.store.listMetaInstances(org, page);
  const items = await Promise.all(result.items.map(async (meta) => metaInstanceView(meta, await loadMembers(ctx, meta.id))));
  return { items, nextToken: result.nextToken };
}
