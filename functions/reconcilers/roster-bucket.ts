import { bucketSettled, machinesOfBucket, walkBucket, type RosterBucket } from '#domain/heartbeat.ts';
import type { Machine } from '#domain/model.ts';
import { heartbeatTimeoutMs, type AppContext } from '#services/context.ts';
import { defineReconciler } from './reconciler.ts';

// A roster bucket whose ids changed (a beat) or that a registration asked to recheck: its machines' liveness is
// brought in line with it, a chunk per commit, then the bucket is marked applied. Level-triggered: a walk cut short
// leaves the bucket unsettled, and due, so the stream's retry or the sweep walks it again.

export interface RosterBucketSnapshot {
  bucket: RosterBucket;
  machines: Array<Machine | null>;
  now: Date;
  timeoutMs: number;
}

export const rosterBucketReconciler = defineReconciler({
  kind: 'roster-bucket',
  watches: {
    'roster-bucket': {
      // Marking the bucket applied is a change too: that one needs no walk.
      concerns: (_before, after, id) => (after && bucketSettled(after) ? [] : [id]),
      dueAt: (bucket) => (bucketSettled(bucket) ? undefined : bucket.changedAt),
    },
  },

  async load(ctx: AppContext, id: string): Promise<RosterBucketSnapshot | null> {
    const bucket = (await ctx.store.getRosterBuckets([id])).get(id);
    if (!bucket) return null;
    const ids = bucketSettled(bucket) ? [] : machinesOfBucket(bucket);
    const found = await ctx.store.getMachines(ids);
    return { bucket, machines: ids.map((machineId) => found.get(machineId) ?? null), now: ctx.clock.now(), timeoutMs: heartbeatTimeoutMs(ctx.config) };
  },

  decide({ bucket, machines, now, timeoutMs }: RosterBucketSnapshot) {
    const walk = walkBucket(bucket, machines, now, timeoutMs);
    if (!walk) return {};
    const changes = walk.change.machines?.length ?? 0;
    // Again at once: the next chunk, or (after a lost race) the same decision on fresh state.
    return { change: walk.change, requeueAt: now, summary: `${changes} liveness change(s)${walk.settles ? ', bucket applied' : ''}` };
  },
});
