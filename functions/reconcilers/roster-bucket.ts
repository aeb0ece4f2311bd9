import { bucketSettled, machinesOfBucket, walkBucket, type RosterBucket, type WalkPolicy } from '#domain/machines/heartbeat.ts';
import type { Machine } from '#domain/core/model.ts';
import { heartbeatTimeoutMs, safetyRules, type AppContext } from '#runtime/context.ts';
import { loadFleetSize } from '#runtime/fleet-size.ts';
import { defineReconciler } from '#reconcilers/reconciler.ts';
import { rosterBucketDueAt } from '#reconcilers/due-times.ts';

// A roster bucket whose ids or alerts changed (a beat) or that a registration asked to recheck: its machines'
// liveness and hardware-health override are brought in line with it, a chunk per commit, then the bucket is marked
// applied. Level-triggered: a walk cut short leaves the bucket unsettled, and due, so the stream's retry or the sweep
// walks it again.

export interface RosterBucketSnapshot {
  bucket: RosterBucket;
  machines: Array<Machine | null>;
  now: Date;
  timeoutMs: number;
  policy: WalkPolicy;
}

export const rosterBucketReconciler = defineReconciler({
  kind: 'roster-bucket',
  watches: {
    'roster-bucket': {
      // Marking the bucket applied is a change too: that one needs no walk.
      concerns: (_before, after, id) => (after && bucketSettled(after) ? [] : [id]),
      dueAt: rosterBucketDueAt,
    },
  },

  async load(ctx: AppContext, id: string): Promise<RosterBucketSnapshot | null> {
    const bucket = (await ctx.store.getRosterBuckets([id])).get(id);
    if (!bucket) return null;
    const ids = bucketSettled(bucket) ? [] : machinesOfBucket(bucket);
    const autoRepair = ctx.config.auto_machine_repair_plugin.enabled;
    // The breaker matters only to a walk that may find a new fault: a bucket with alerting machines.
    const faults = autoRepair && !bucketSettled(bucket) && bucket.alerts !== undefined;
    const [found, safety, fleetSize] = await Promise.all([ctx.store.getMachines(ids), faults ? ctx.store.getSafety() : null, faults ? loadFleetSize(ctx) : 0]);
    const now = ctx.clock.now();
    return {
      bucket,
      machines: ids.map((machineId) => found.get(machineId) ?? null),
      now,
      timeoutMs: heartbeatTimeoutMs(ctx.config),
      policy: { autoRepair, safety, fleetSize, now, rules: safetyRules(ctx.config) },
    };
  },

  decide({ bucket, machines, now, timeoutMs, policy }: RosterBucketSnapshot) {
    const walk = walkBucket(bucket, machines, now, timeoutMs, policy);
    if (!walk) return {};
    const changes = walk.separate.length + (walk.change.machines?.length ?? 0);
    const summary = `${changes} machine change(s)${walk.settles ? ', bucket applied' : ''}`;
    // Again at once: the next chunk, or (after a lost race) the same decision on fresh state.
    return { separately: walk.separate, change: walk.change, requeueAt: now, summary };
  },
});
