import { preventingSources } from '#domain/core/health.ts';
import { reconcileMetaInstance, type MetaSnapshot } from '#domain/meta-instances/meta-instances.ts';
import type { Instance, Machine } from '#domain/core/model.ts';
import type { AppContext } from '#runtime/context.ts';
import { heartbeatViewOf } from '#runtime/heartbeat-view.ts';
import { defineReconciler, fellDue } from '#reconcilers/reconciler.ts';
import { memberMachineDueAt, metaInstanceDueAt } from '#reconcilers/due-times.ts';
import { loadMetaSnapshot } from '#runtime/meta-instance-snapshot.ts';

// A meta-instance is kept in line with its spec: failed members out and counted, replacements placed, a deleted one
// emptied. Each pass commits one decision; the next pass decides on the state that decision left.

/** Instance statuses a meta-instance decision reads a member in: live ones, and Failed (counted once). */
const COUNTED: ReadonlySet<Instance['status']> = new Set(['Provisioning', 'Ready', 'Repairing', 'Failed']);

/** What of a bound machine a member's health and placement depend on (memberFailure, homePlace). */
const memberHealthOf = (machine: Machine): string =>
  JSON.stringify([
    preventingSources(machine.healthOverrides),
    machine.heartbeatLive,
    machine.lastHeartbeatAt ?? null,
    machine.heartbeatStaleAt ?? null,
    machine.rack,
    machine.nvlinkDomain ?? null,
  ]);

export const metaInstanceReconciler = defineReconciler({
  kind: 'meta-instance',
  watches: {
    'meta-instance': {
      concerns: (_before, _after, id) => [id],
      dueAt: metaInstanceDueAt,
    },
    // A member that appears, goes or changes status may fail the meta-instance or free a place in it; a member
    // that was not live and is not live now (Terminating to Terminated) changes nothing a decision reads.
    instance: {
      concerns: (before, after) =>
        !before || !after || (before.status !== after.status && (COUNTED.has(before.status) || COUNTED.has(after.status)))
          ? [before?.metaInstanceId, after?.metaInstanceId]
          : [],
    },
    // What happens to a member's machine may fail the member: its health overrides, its heartbeat, its rack, its
    // binding. Its cleanup's progress does not, nor its unbinding once clean (finishCleanup terminates the member in
    // the same change, and a Terminated member is no longer read).
    machine: {
      concerns: (before, after) => {
        if (!before || !after || fellDue(before, after)) return [before?.boundMetaInstanceId, after?.boundMetaInstanceId];
        if (!after.boundMetaInstanceId) return [];
        return before.boundMetaInstanceId !== after.boundMetaInstanceId || memberHealthOf(before) !== memberHealthOf(after) ? [after.boundMetaInstanceId] : [];
      },
      dueAt: memberMachineDueAt,
    },
  },

  /** The meta-instance and the site heartbeat in one read, then its members and their machines (loadMetaSnapshot). */
  async load(ctx: AppContext, id: string): Promise<MetaSnapshot | null> {
    const read = await ctx.store.getRecords({ metaInstances: [id], siteHeartbeat: true });
    const meta = read.metaInstances.get(id);
    return meta ? loadMetaSnapshot(ctx, meta, undefined, heartbeatViewOf(ctx, read.siteHeartbeat ?? null)) : null;
  },

  decide(snapshot: MetaSnapshot) {
    const decision = reconcileMetaInstance(snapshot);
    if (decision.kind === 'none') return {};
    // Settled only when a pass finds nothing to do; a lost race is decided again on fresh state too.
    return { change: decision.change, requeueAt: snapshot.now, summary: decision.summary };
  },
});
