import type { Ref } from '#reconcilers/reconciler.ts';
import { defineReconciler } from '#reconcilers/reconciler.ts';
import type { AppContext } from '#runtime/context.ts';

// A beat found that a machine which left the roster has gone stale (heartbeat.ts nextStaleCheck): the meta-instances
// bound to the machines now due look again at once, instead of at the next sweep. One page of the due index: what
// is due, not the fleet. Whatever does not fit is the sweep's, as before.

/** Due entries looked at per check: as many as one sweep takes. */
const DUE_PAGE = 200;

export interface StaleCheckSnapshot {
  /** Meta-instances with a member on a machine whose heartbeat went stale. */
  metaInstanceIds: string[];
}

export const staleCheckReconciler = defineReconciler({
  kind: 'stale-check',
  watches: {
    'stale-check': { concerns: (_before, _after, id) => [id] },
  },

  async load(ctx: AppContext): Promise<StaleCheckSnapshot> {
    const now = ctx.clock.now();
    const due = await ctx.store.dueEntities(now, { limit: DUE_PAGE });
    const machines = await ctx.store.getMachines(due.items.filter((ref) => ref.entity === 'machine').map((ref) => ref.id));
    const stale = [...machines.values()].filter((m) => !m.heartbeatLive && m.heartbeatStaleAt !== undefined && m.heartbeatStaleAt <= now.toISOString());
    return { metaInstanceIds: [...new Set(stale.map((m) => m.boundMetaInstanceId).filter((id): id is string => id !== undefined))] };
  },

  decide: ({ metaInstanceIds }: StaleCheckSnapshot) => ({ enqueue: metaInstanceIds.map((id): Ref => ({ entity: 'meta-instance', id })) }),
});
