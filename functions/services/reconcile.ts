import { claimCleanup, recordDeleteOutcome } from '#domain/cleanup.ts';
import { claimCreate, completeCreate, createLeaseMs } from '#domain/instances.ts';
import type { EntityRef } from '#store/items.ts';
import type { AppContext } from './context.ts';
import { reconcileMeta, wakeWaiting, wakeWaitingForMachine } from './meta-instances.ts';
import { watchStuckRepairs } from './stuck-repairs.ts';
import { ageMs } from '#domain/time.ts';
import { loadHeartbeatView } from './heartbeat-view.ts';
import { committedOnce, retryOnStale } from './retry-on-stale.ts';

// Level-triggered reconcilers: each reads the record afresh, asks the domain what is due and does it. Running one
// twice, late, or for a duplicated stream record does nothing more, because every step is claimed by a
// conditional write before its side effect, and a lost claim just ends the run.

/** Send the site agent's create for a Provisioning instance, then record its outcome. */
export async function reconcileInstance(ctx: AppContext, instanceId: string): Promise<void> {
  const instance = await ctx.store.getInstance(instanceId);
  if (!instance) return;
  const retry = ctx.config.instance_create_retry;
  const claim = claimCreate(
    instance,
    ctx.clock.now(),
    createLeaseMs({ maxAttempts: retry.max_attempts, baseDelayMs: retry.base_delay_ms, timeoutMs: retry.timeout_ms }),
  );
  if (claim && (await committedOnce(() => ctx.store.commit(claim)))) {
    const outcome = await ctx.agent.create({
      name: instance.name,
      machineId: instance.machineId,
      instanceId: instance.id,
      clientToken: instance.creation.clientToken,
    });
    ctx.log.info('site agent create finished', { instanceId, ...outcome });
    await retryOnStale(async () => {
      const fresh = await ctx.store.getInstance(instanceId);
      const machine = fresh && (await ctx.store.getMachine(fresh.machineId));
      const change = fresh && machine && completeCreate(fresh, machine, outcome, ctx.clock.now());
      if (change) await ctx.store.commit(change);
    });
  }
  // A release that waited for this create can go ahead now.
  await reconcileMachine(ctx, instance.machineId);
  if (instance.metaInstanceId) await reconcileMeta(ctx, instance.metaInstanceId);
  // A replacement that finished provisioning frees a slot under the site's replacement cap.
  if (instance.replacement && instance.status !== 'Provisioning') await wakeWaiting(ctx, instance.machineType);
}

/** Send the site agent's DELETE for a machine in Cleanup; the agent's report then finishes the cleanup. */
export async function reconcileMachine(ctx: AppContext, machineId: string): Promise<void> {
  const machine = await ctx.store.getMachine(machineId);
  if (!machine) return;
  // What happens to a machine may fail the meta-instance member on it, or free it for one that waits.
  const instance = machine.instanceId ? await ctx.store.getInstance(machine.instanceId) : null;
  if (instance?.metaInstanceId) await reconcileMeta(ctx, instance.metaInstanceId);
  await wakeWaitingForMachine(ctx, machine);
  await sendCleanup(ctx, machineId);
}

async function sendCleanup(ctx: AppContext, machineId: string): Promise<void> {
  const machine = await ctx.store.getMachine(machineId);
  if (!machine?.cleanup) return;
  const instance = await ctx.store.getInstance(machine.cleanup.instanceId);
  const claim = claimCleanup(machine, instance, ctx.clock.now(), ctx.cleanupTimings);
  if (!claim || !(await committedOnce(() => ctx.store.commit(claim)))) return;
  const siteName = instance?.siteName ?? machine.cleanup.instanceId;
  const outcome = await ctx.agent.delete(siteName);
  ctx.log.info('site agent delete finished', { machineId, siteName, ...outcome });
  await retryOnStale(async () => {
    const fresh = await ctx.store.getMachine(machineId);
    const freshInstance = fresh?.cleanup ? await ctx.store.getInstance(fresh.cleanup.instanceId) : null;
    const change = fresh && recordDeleteOutcome(fresh, freshInstance, outcome, ctx.clock.now(), ctx.cleanupTimings);
    if (change) await ctx.store.commit(change);
  });
}

export async function reconcile(ctx: AppContext, ref: EntityRef): Promise<void> {
  if (ref.entity === 'instance') await reconcileInstance(ctx, ref.id);
  else if (ref.entity === 'meta-instance') await reconcileMeta(ctx, ref.id);
  else await reconcileMachine(ctx, ref.id);
}

/** The schedule's sweep: whatever is due and was not finished by a stream reaction (a crash, a lost lease). */
export async function sweep(ctx: AppContext, limit = 200): Promise<{ due: number; failed: number }> {
  const due = await ctx.store.dueEntities(ctx.clock.now(), limit);
  // A silent site agent makes every machine stale at once without a single write: check every meta-instance then.
  const heartbeat = await loadHeartbeatView(ctx);
  if (heartbeat.rosterSeenAt && ageMs(ctx.clock.now(), heartbeat.rosterSeenAt) > heartbeat.timeoutMs) {
    const metas = await ctx.store.listMetaInstances(null, { limit });
    due.push(...metas.items.map((meta) => ({ entity: 'meta-instance' as const, id: meta.id })));
  }
  const results = await Promise.allSettled([...due.map((ref) => reconcile(ctx, ref)), watchStuckRepairs(ctx)]);
  const failed = results.filter((r) => r.status === 'rejected');
  for (const failure of failed) ctx.log.error('sweep reconcile failed', { error: String((failure as PromiseRejectedResult).reason) });
  return { due: due.length, failed: failed.length };
}
