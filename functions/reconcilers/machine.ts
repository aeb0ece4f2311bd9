import { claimCleanup, claimStatusCheck, recordDeleteOutcome, recordStatusCheck, type CleanupTimings, type DeleteOutcome } from '#domain/instances/cleanup.ts';
import type { Instance, Machine } from '#domain/core/model.ts';
import type { InstanceStatusOutcome } from '#domain/instances/status-checks.ts';
import { siteCleanupTimings, type AppContext } from '#runtime/context.ts';
import type { RecordIds } from '#store/aggregates/records.ts';
import type { Change } from '#domain/core/change.ts';
import { committedById, defineReconciler, fellDue } from '#reconcilers/reconciler.ts';
import { cleanupDueAt } from '#reconcilers/due-times.ts';

// A machine in Cleanup gets the site agent's DELETE for its last instance: claimed under a lease, sent, and its
// answer recorded; the agent's cleanup report (an API call) then returns the machine to the pool. A report that is
// overdue makes the controller ask the agent where the instance stands, so a lost report never strands a machine.

export interface MachineSnapshot {
  machine: Machine;
  /** The instance being cleaned up, if the machine is in cleanup: its create may still be in flight. */
  instance: Instance | null;
  now: Date;
  timings: CleanupTimings;
}

/** A call to the site agent about the instance on the machine: its DELETE, or the question where it stands. */
interface CleanupCall {
  call: 'delete' | 'status';
  machineId: string;
  siteName: string;
}

type CleanupAnswer = { call: 'delete'; outcome: DeleteOutcome } | { call: 'status'; outcome: InstanceStatusOutcome };

export const machineReconciler = defineReconciler({
  kind: 'machine',
  watches: {
    machine: {
      // Only a machine in cleanup has anything to do here, and only once its DELETE is to be claimed (pending):
      // a claim or an accepted DELETE waits for its lease, so such a record counts only once it fell due. A record
      // without images is looked at to find out. The instance in cleanup is read in the same request.
      concerns: (before, after, id) => {
        if (after === null) return [id];
        const cleanup = after.cleanup;
        if (!cleanup || (cleanup.phase !== 'pending' && !fellDue(before, after))) return [];
        return [{ id, related: { instances: [cleanup.instanceId] } }];
      },
      dueAt: cleanupDueAt,
    },
    // A release that waited for the instance's create call can go ahead once that call is over. A create that
    // ended Ready was not released meanwhile (a release makes the instance Terminating, and the outcome keeps that).
    instance: {
      concerns: (before, after) =>
        before?.creation.phase === 'in-flight' && after && after.creation.phase !== 'in-flight' && after.status !== 'Ready'
          ? [{ id: after.machineId, related: { instances: [after.id] } }]
          : [],
    },
  },

  /** The machine and the instance in cleanup: one read when `related` names that instance (the stream image does). */
  async load(ctx: AppContext, id: string, related?: RecordIds): Promise<MachineSnapshot | null> {
    const hinted = related?.instances?.length ? await ctx.store.getRecords({ machines: [id], instances: related.instances }) : null;
    const machine = hinted ? (hinted.machines.get(id) ?? null) : await ctx.store.getMachine(id);
    if (!machine) return null;
    const cleanup = machine.cleanup;
    const instance = !cleanup
      ? null
      : (hinted?.instances.get(cleanup.instanceId) ??
        (related?.instances?.includes(cleanup.instanceId) ? null : await ctx.store.getInstance(cleanup.instanceId)));
    return { machine, instance, now: ctx.clock.now(), timings: siteCleanupTimings(ctx.config) };
  },

  relatedOf: ({ machine }: MachineSnapshot) => (machine.cleanup ? { instances: [machine.cleanup.instanceId] } : {}),

  // Settling a DELETE or a status check writes the machine (and the instance, when it finishes the cleanup), each
  // guarded by its version.
  advance: (snapshot: MachineSnapshot, change: Change, now: Date): MachineSnapshot => ({
    ...snapshot,
    machine: committedById(change.machines, snapshot.machine.id) ?? snapshot.machine,
    instance: snapshot.instance && (committedById(change.instances, snapshot.instance.id) ?? snapshot.instance),
    now,
  }),

  decide({ machine, instance, now, timings }: MachineSnapshot) {
    if (!machine.cleanup) return {};
    const siteName = instance?.siteName ?? machine.cleanup.instanceId;
    const check = claimStatusCheck(machine, now);
    if (check)
      return {
        change: check,
        effect: { call: 'status', machineId: machine.id, siteName } satisfies CleanupCall,
        summary: 'cleanup report overdue: status check claimed',
      };
    const claim = claimCleanup(machine, instance, now, timings);
    if (!claim) return {};
    return { change: claim, effect: { call: 'delete', machineId: machine.id, siteName } satisfies CleanupCall, summary: 'delete claimed' };
  },

  effects: {
    async perform(ctx: AppContext, request: CleanupCall): Promise<CleanupAnswer> {
      const answer: CleanupAnswer =
        request.call === 'delete'
          ? { call: 'delete', outcome: await ctx.agent.delete(request.siteName) }
          : { call: 'status', outcome: await ctx.agent.status(request.siteName) };
      ctx.log.info(`site agent ${request.call} finished`, { ...request, ...answer.outcome });
      return answer;
    },
    settle: ({ machine, instance, now, timings }: MachineSnapshot, _request: CleanupCall, answer: CleanupAnswer) =>
      answer.call === 'delete'
        ? recordDeleteOutcome(machine, instance, answer.outcome, now, timings)
        : recordStatusCheck(machine, instance, answer.outcome, now),
  },
});
