import type { Instance, Principal } from '#domain/core/model.ts';
import { requestPower, type PowerAction } from '#domain/instances/power.ts';
import type { AppContext } from '#runtime/context.ts';
import { retryOnStale } from '#runtime/retry-on-stale.ts';
import { committedRecord } from '#reconcilers/reconciler.ts';
import { loadOwnInstance } from '#services/instances.ts';

/**
 * A tenant's power action: recorded on the instance with its machine's history entry, in one conditional write. The
 * power reconciler sends it to the site agent; the answer is 202 with the action pending.
 */
export async function requestInstancePower(ctx: AppContext, principal: Principal, id: string, action: PowerAction): Promise<Instance> {
  const instance = await retryOnStale(async () => {
    const read = await loadOwnInstance(ctx, principal, id);
    const change = requestPower(read, action, { id: ctx.ids.next('pw'), actor: principal.sub, now: ctx.clock.now() });
    await ctx.store.commit(change);
    return committedRecord(change.instances![0]!);
  });
  ctx.log.info('power action requested', { instanceId: id, action });
  return instance;
}
