import { preventingSources } from '#domain/health.ts';
import { reconcileMetaInstance, type Member, type MetaSnapshot } from '#domain/meta-instances.ts';
import type { Machine, MetaInstance } from '#domain/model.ts';
import type { AppContext } from '#services/context.ts';
import { loadHeartbeatView } from '#services/heartbeat-view.ts';
import { defineReconciler } from './reconciler.ts';

// A meta-instance is kept in line with its spec: failed members out and counted, replacements placed, a deleted one
// emptied. Each pass commits one decision; the next pass decides on the state that decision left.

export async function loadMembers(ctx: AppContext, metaInstanceId: string): Promise<Member[]> {
  const instances = await ctx.store.membersOf(metaInstanceId);
  return Promise.all(instances.map(async (instance) => ({ instance, machine: await ctx.store.getMachine(instance.machineId) })));
}

export async function loadPinned(ctx: AppContext, ids: string[] = []): Promise<Map<string, Machine | null>> {
  return new Map(await Promise.all(ids.map(async (id) => [id, await ctx.store.getMachine(id)] as const)));
}

/** Everything one decision about the meta-instance reads; `members` is given for a meta-instance not stored yet. */
export async function loadMetaSnapshot(ctx: AppContext, meta: MetaInstance, members?: Member[]): Promise<MetaSnapshot> {
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

export const metaInstanceReconciler = defineReconciler({
  kind: 'meta-instance',
  watches: {
    'meta-instance': {
      concerns: (_before, _after, id) => [id],
      dueAt(meta) {
        if (meta.status === 'Deleting') return meta.updatedAt;
        if (meta.status === 'Placing' || meta.status === 'Retrying') return meta.nextAttemptAt ?? meta.updatedAt;
        return undefined;
      },
    },
    // A member that appears, goes or changes status may fail the meta-instance or free a place in it.
    instance: {
      concerns: (before, after) => (!before || !after || before.status !== after.status ? [before?.metaInstanceId, after?.metaInstanceId] : []),
    },
    // What happens to a member's machine may fail the member.
    machine: {
      concerns: (before, after) => [before?.boundMetaInstanceId, after?.boundMetaInstanceId],
      // The sweep must find a failed member's machine too, not only the stream: at once for a health override, and
      // once the heartbeat counts as stale for a stopped one (which no write announces).
      dueAt(machine) {
        if (!machine.boundMetaInstanceId || machine.state !== 'Assigned') return undefined;
        if (preventingSources(machine.healthOverrides).length > 0) return machine.updatedAt;
        if (!machine.heartbeatLive && machine.heartbeatStaleAt) return machine.heartbeatStaleAt;
        return undefined;
      },
    },
  },

  async load(ctx: AppContext, id: string): Promise<MetaSnapshot | null> {
    const meta = await ctx.store.getMetaInstance(id);
    return meta && loadMetaSnapshot(ctx, meta);
  },

  decide(snapshot: MetaSnapshot) {
    const decision = reconcileMetaInstance(snapshot);
    if (decision.kind === 'none') return {};
    // Settled only when a pass finds nothing to do; a lost race is decided again on fresh state too.
    return { change: decision.change, requeueAt: snapshot.now, summary: decision.summary };
  },
});
