import { claimCreate, claimCreateCheck, completeCreate, createLeaseMs, recordCreateCheck, type CreateOutcome } from '#domain/instances/instances.ts';
import type { Instance, Machine } from '#domain/core/model.ts';
import type { InstanceStatusOutcome } from '#domain/instances/status-checks.ts';
import type { AppContext, SiteAgent } from '#runtime/context.ts';
import type { RecordIds } from '#store/aggregates/records.ts';
import type { Change } from '#domain/core/change.ts';
import { committedById, defineReconciler, fellDue } from '#reconcilers/reconciler.ts';
import { recordCreateOutcome } from '#runtime/create-metrics.ts';
import { instanceDueAt } from '#reconcilers/due-times.ts';

// A Provisioning instance gets the site agent's create: claimed under a lease (so a duplicated trigger never sends a
// second one), sent, and its outcome recorded: Ready, or Failed with its machine sent through cleanup. A claim that
// lapsed with no outcome recorded makes the controller ask the agent before sending the create again.

export interface InstanceSnapshot {
  instance: Instance;
  /** Its machine: recording a create's outcome needs it (read while a create is in flight, or read along). */
  machine: Machine | null;
  now: Date;
  createLeaseMs: number;
}

type CreateRequest = Parameters<SiteAgent['create']>[0];

/** A call to the site agent about the instance: its create, or the question where a lost create stands. */
type CreateCall = { call: 'create'; request: CreateRequest } | { call: 'status'; instanceId: string; siteName: string };

type CreateAnswer = { call: 'create'; outcome: CreateOutcome } | { call: 'status'; outcome: InstanceStatusOutcome };

export const instanceReconciler = defineReconciler({
  kind: 'instance',
  watches: {
    instance: {
      // Only a Provisioning instance has anything to do here: a create to claim (pending), or one whose claim lapsed
      // (in-flight: only once it fell due). A record without images is looked at to find out.
      concerns: (before, after, id) =>
        after === null
          ? [id]
          : after.status === 'Provisioning' && (after.creation.phase === 'pending' || (after.creation.phase === 'in-flight' && fellDue(before, after)))
            ? [{ id, related: { machines: [after.machineId] } }]
            : [],
      dueAt: instanceDueAt,
    },
  },

  /** The instance, and its machine while a create is in flight: in one read when `related` names the machine. */
  async load(ctx: AppContext, id: string, related?: RecordIds): Promise<InstanceSnapshot | null> {
    const hinted = related?.machines?.length ? await ctx.store.getRecords({ instances: [id], machines: related.machines }) : null;
    const instance = hinted ? (hinted.instances.get(id) ?? null) : await ctx.store.getInstance(id);
    if (!instance) return null;
    // Needed only while a create is in flight (to record its outcome); kept when read along anyway, so that the
    // settle after a claim can start from this snapshot.
    const readAlong = related?.machines?.includes(instance.machineId) ?? false;
    const machine = readAlong
      ? (hinted!.machines.get(instance.machineId) ?? null)
      : instance.creation.phase === 'in-flight'
        ? await ctx.store.getMachine(instance.machineId)
        : null;
    const retry = ctx.config.instance_create_retry;
    const leaseMs = createLeaseMs({ maxAttempts: retry.max_attempts, baseDelayMs: retry.base_delay_ms, timeoutMs: retry.timeout_ms });
    return { instance, machine, now: ctx.clock.now(), createLeaseMs: leaseMs };
  },

  relatedOf: ({ instance }: InstanceSnapshot) => ({ machines: [instance.machineId] }),

  // Settling a create writes the instance (and the machine, for a failed create), each guarded by its version.
  advance: (snapshot: InstanceSnapshot, change: Change, now: Date): InstanceSnapshot | null =>
    snapshot.machine && {
      ...snapshot,
      instance: committedById(change.instances, snapshot.instance.id) ?? snapshot.instance,
      machine: committedById(change.machines, snapshot.machine.id) ?? snapshot.machine,
      now,
    },

  decide({ instance, now, createLeaseMs: leaseMs }: InstanceSnapshot) {
    const check = claimCreateCheck(instance, now);
    if (check) {
      const effect: CreateCall = { call: 'status', instanceId: instance.id, siteName: instance.siteName };
      return { change: check, effect, summary: 'create outcome lost: status check claimed' };
    }
    const claim = claimCreate(instance, now, leaseMs);
    if (!claim) return {};
    const request: CreateRequest = { name: instance.name, machineId: instance.machineId, instanceId: instance.id, clientToken: instance.creation.clientToken };
    return { change: claim, effect: { call: 'create', request } satisfies CreateCall, summary: 'create claimed' };
  },

  effects: {
    async perform(ctx: AppContext, effect: CreateCall): Promise<CreateAnswer> {
      if (effect.call === 'status') {
        const outcome = await ctx.agent.status(effect.siteName);
        ctx.log.info('site agent status finished', { ...effect, ...outcome });
        return { call: 'status', outcome };
      }
      const outcome = await ctx.agent.create(effect.request);
      recordCreateOutcome(ctx.metrics, outcome);
      ctx.log.info('site agent create finished', { instanceId: effect.request.instanceId, ...outcome });
      return { call: 'create', outcome };
    },
    settle({ instance, machine, now }: InstanceSnapshot, _effect: CreateCall, answer: CreateAnswer) {
      if (!machine) return null;
      return answer.call === 'create' ? completeCreate(instance, machine, answer.outcome, now) : recordCreateCheck(instance, machine, answer.outcome, now);
    },
  },
});
