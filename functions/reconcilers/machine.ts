import { claimCleanup, recordDeleteOutcome, type DeleteOutcome, type CleanupTimings } from '#domain/cleanup.ts';
import type { Instance, Machine } from '#domain/model.ts';
import type { AppContext } from '#services/context.ts';
import { defineReconciler } from './reconciler.ts';

// A machine in Cleanup gets the site agent's DELETE for its last instance: claimed under a lease, sent, and its
// answer recorded; the agent's cleanup report (an API call) then returns the machine to the pool.

export interface MachineSnapshot {
  machine: Machine;
  /** The instance being cleaned up, if the machine is in cleanup: its create may still be in flight. */
  instance: Instance | null;
  now: Date;
  timings: CleanupTimings;
}

interface DeleteRequest {
  machineId: string;
  siteName: string;
}

export const machineReconciler = defineReconciler({
  kind: 'machine',
  watches: {
    machine: {
      concerns: (_before, _after, id) => [id],
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
    return { machine, instance, now: ctx.clock.now(), timings: ctx.cleanupTimings };
  },

  decide({ machine, instance, now, timings }: MachineSnapshot) {
    const claim = claimCleanup(machine, instance, now, timings);
    if (!claim || !machine.cleanup) return {};
    const request: DeleteRequest = { machineId: machine.id, siteName: instance?.siteName ?? machine.cleanup.instanceId };
    return { change: claim, effect: request, summary: 'delete claimed' };
  },

  effects: {
    async perform(ctx: AppContext, request: DeleteRequest): Promise<DeleteOutcome> {
      const outcome = await ctx.agent.delete(request.siteName);
      ctx.log.info('site agent delete finished', { ...request, ...outcome });
      return outcome;
    },
    settle: ({ machine, instance, now, timings }: MachineSnapshot, _request: DeleteRequest, outcome: DeleteOutcome) =>
      recordDeleteOutcome(machine, instance, outcome, now, timings),
  },
});
