import {
  assertSatisfiable,
  deleteMetaInstance as decideDelete,
  newMetaInstance,
  reconcileMetaInstance,
  type MetaInstanceRequest,
} from '#domain/meta-instances/meta-instances.ts';
import type { MetaInstance, Principal } from '#domain/core/model.ts';
import { metaInstanceView } from '#domain/meta-instances/views.ts';
import { notFound } from '#domain/core/rejection.ts';
import { assertWithinQuota, checkQuota } from '#domain/reservations/quotas.ts';
import type { Page } from '#store/paging.ts';
import { loadMembers, loadMetaSnapshot, loadPinned } from '#runtime/meta-instance-snapshot.ts';
import type { AppContext } from '#runtime/context.ts';
import { retryOnStale } from '#runtime/retry-on-stale.ts';

export async function createMetaInstance(ctx: AppContext, principal: Principal, request: MetaInstanceRequest) {
  assertSatisfiable(request, await ctx.store.getCatalog(), await loadPinned(ctx, request.machineIds));
  assertWithinQuota(await ctx.store.getQuotaUsage(principal.org, request.machineType), request.minNodes);
  const meta = newMetaInstance(ctx.ids.next('mi'), principal.org, request, principal.sub, ctx.clock.now());
  // The record and its first placement commit together: 201 comes back with instances, or Placing with the reason.
  const created = await retryOnStale(async () => {
    const snapshot = await loadMetaSnapshot(ctx, meta, []);
    // Placing it would take the org past its quota: refused, nothing recorded.
    checkQuota(snapshot.usage ?? null, meta.minNodes);
    const decision = reconcileMetaInstance(snapshot);
    if (decision.kind === 'none') throw new Error('a new meta-instance always gets a first decision');
    const change = decision.change;
    change.metaInstances = (change.metaInstances ?? []).map((v) => (v.after.id === meta.id ? { before: null, after: v.after } : v));
    await ctx.store.commit(change);
    return change.metaInstances.find((v) => v.after.id === meta.id)!.after;
  });
  ctx.log.info('meta-instance created', { metaInstanceId: meta.id, machineType: meta.machineType, minNodes: meta.minNodes, status: created.status });
  return showMetaInstance(ctx, principal, meta.id);
}

export async function loadOwn(ctx: AppContext, principal: Principal, id: string): Promise<MetaInstance> {
  const meta = await ctx.store.getMetaInstance(id);
  if (!meta || meta.org !== principal.org || meta.status === 'Deleted') throw notFound(`meta-instance ${id}`);
  return meta;
}

export async function showMetaInstance(ctx: AppContext, principal: Principal, id: string) {
  const meta = await loadOwn(ctx, principal, id);
  return metaInstanceView(meta, (await loadMembers(ctx, meta)).members);
}

export async function deleteMetaInstance(ctx: AppContext, principal: Principal, id: string) {
  await retryOnStale(async () => {
    const meta = await loadOwn(ctx, principal, id);
    const decision = decideDelete(meta, (await loadMembers(ctx, meta)).members, ctx.clock.now());
    if (decision.kind === 'commit') await ctx.store.commit(decision.change);
  });
  ctx.log.info('meta-instance delete requested', { metaInstanceId: id });
  const meta = (await ctx.store.getMetaInstance(id))!;
  return metaInstanceView(meta, (await loadMembers(ctx, meta)).members);
}

/** A tenant's meta-instances, or (org null) every one on the site for providers. */
export async function listMetaInstances(
  ctx: AppContext,
  org: string | null,
  page: { limit: number; nextToken?: string | undefined },
): Promise<Page<ReturnType<typeof metaInstanceView>>> {
  const result = await ctx.store.listMetaInstances(org, page);
  const items = await Promise.all(result.items.map(async (meta) => metaInstanceView(meta, (await loadMembers(ctx, meta)).members)));
  return { items, nextToken: result.nextToken };
}
