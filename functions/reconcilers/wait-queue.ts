import { inAllocatableIndex } from '#domain/core/health.ts';
import type { Machine, MetaInstance } from '#domain/core/model.ts';
import type { AppContext } from '#runtime/context.ts';
import { defineReconciler } from '#reconcilers/reconciler.ts';

// The queue of meta-instances waiting for machines of one type (the entity's id is the machine type). A machine of
// that type freed up, or a replacement slot opened, wakes the longest-waiting few, in the order they started waiting.

/** How many waiting meta-instances one freed machine wakes: enough to find one that can use it, not the whole queue. */
const WAKE_LIMIT = 5;

export interface WaitQueueSnapshot {
  waiting: MetaInstance[];
}

const freedByHeartbeat = (before: Machine, after: Machine): boolean =>
  before.machineType !== after.machineType ||
  before.heartbeatLive !== after.heartbeatLive ||
  before.lastHeartbeatAt !== after.lastHeartbeatAt ||
  before.heartbeatStaleAt !== after.heartbeatStaleAt ||
  before === after;

export const waitQueueReconciler = defineReconciler({
  kind: 'wait-queue',
  watches: {
    // A machine that became free for placement: it entered the allocatable index, or, in it, its heartbeat came
    // back. A change to a machine that was free before and is still (labels, a cleared override of no effect) frees
    // nothing.
    machine: {
      concerns: (before, after) =>
        after && inAllocatableIndex(after) && (!before || !inAllocatableIndex(before) || freedByHeartbeat(before, after)) ? [after.machineType] : [],
    },
    // A replacement that finished provisioning frees a slot under the site's replacement cap.
    instance: {
      concerns: (before, after) => (after?.replacement && before?.status === 'Provisioning' && after.status !== 'Provisioning' ? [after.machineType] : []),
    },
  },

  async load(ctx: AppContext, machineType: string): Promise<WaitQueueSnapshot> {
    return { waiting: await ctx.store.waitingMetaInstances(machineType, WAKE_LIMIT) };
  },

  decide: ({ waiting }: WaitQueueSnapshot) => ({ enqueue: waiting.map((meta) => ({ entity: 'meta-instance', id: meta.id })) }),
});
