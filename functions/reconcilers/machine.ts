import {
  claimCleanup,
  claimStatusCheck,
  recordDeleteOutcome,
  recordStatusCheck,
  type CleanupTimings,
  type DeleteOutcome,
} from '#domain/cleanup.ts';
import type { Instance, Machine } from '#domain/model.ts';
import type { InstanceStatusOutcome } from '#domain/status-checks.ts';
import { siteCleanupTimings, type AppContext } from '#services/context.ts';
import { defineReconciler } from './reconciler.ts';

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
      // Only a machine in cleanup has anything to do here (a record without images is looked at to find out).
      concerns: (_before, after, id) => (after === null || after.cleanup ? [id] : []),
      dueAt(machine) {
        const cleanup = machine.cleanup;
        if (machine.state !== 'Cleanup' || !cleanup || cleanup.phase === 'failed') return undefined;
        return cleanup.phase === 'pending' ? machine.updatedAt : cleanup.leaseUntil;
      },
    },
    // A release that waited for the instance's create call can go ahead once that call is over.
    instance: {
      concerns: (before, after) => (before?.creation.phase === 'in-flight' && after && after.creation.phase !== 'in-flight' ? [after.machineId] : []),
    },
  },

  async load(ctx: AppContext, id: string): Promise<MachineSnapshot | null> {
    const machine = await ctx.store.getMachine(id);
    if (!machine) return null;
    const instance = machine.cleanup ? await ctx.store.getInstance(machine.cleanup.instanceId) : null;
    return { machine, instance, now: ctx.clock.now(), timings: siteCleanupTimings(ctx.config) };
  },

  decide({ machine, instance, now, timings }: MachineSnapshot) {
    if (!machine.cleanup) return {};
    const siteName = instance?.siteName ?? machine.cleanup.instanceId;
    const check = claimStatusCheck(machine, now);
    if (check) return { change: check, effect: { call: 'status', machineId: machine.id, siteName } satisfies CleanupCall, summary: 'cleanup report overdue: status check claimed' };
    const claim = claimCleanup(machine, instance, now, timings);
    if (!claim) return {};
    return { change: claim, effect: { call: 'delete', machineId: machine.id, siteName } satisfies CleanupCall, summary: 'delete claimed' };
  },

  effects: {
    async perform(ctx: AppContext, request: CleanupCall): Promise<CleanupAnswer> {
      const answer: CleanupAnswer =
        request.call === 'delete' ? { call: 'delete', outcome: await ctx.agent.delete(request.siteName) } : { call: 'status', outcome: await ctx.agent.status(request.siteName) };
      ctx.log.info(`site agent ${request.call} finished`, { ...request, ...answer.outcome });
      return answer;
    },
    settle: ({ machine, instance, now, timings }: MachineSnapshot, _request: CleanupCall, answer: CleanupAnswer) =>
      answer.call === 'delete' ? recordDeleteOutcome(machine, instance, answer.outcome, now, timings) : recordStatusCheck(machine, instance, answer.outcome, now),
  },
});
