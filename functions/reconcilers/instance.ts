import { claimCreate, completeCreate, createLeaseMs, type CreateOutcome } from '#domain/instances.ts';
import type { Instance, Machine } from '#domain/model.ts';
import type { AppContext, SiteAgent } from '#services/context.ts';
import { defineReconciler } from './reconciler.ts';
import { recordCreateOutcome } from '#services/create-metrics.ts';

// A Provisioning instance gets the site agent's create: claimed under a lease (so a duplicated trigger never sends a
// second one), sent, and its outcome recorded: Ready, or Failed with its machine sent through cleanup.

export interface InstanceSnapshot {
  instance: Instance;
  /** Its machine, read only while a create is in flight: recording the outcome needs it. */
  machine: Machine | null;
  now: Date;
  createLeaseMs: number;
}

type CreateRequest = Parameters<SiteAgent['create']>[0];

export const instanceReconciler = defineReconciler({
  kind: 'instance',
  watches: {
    instance: {
      concerns: (_before, _after, id) => [id],
      dueAt(instance) {
        if (instance.status !== 'Provisioning') return undefined;
        const { creation } = instance;
        if (creation.phase === 'pending') return instance.updatedAt;
        // A claim whose holder crashed lapses: the create is sent again (same client token) once it has.
        if (creation.phase === 'in-flight') return creation.leaseUntil;
        return undefined;
      },
    },
  },

  async load(ctx: AppContext, id: string): Promise<InstanceSnapshot | null> {
    const instance = await ctx.store.getInstance(id);
    if (!instance) return null;
    const machine = instance.creation.phase === 'in-flight' ? await ctx.store.getMachine(instance.machineId) : null;
    const retry = ctx.config.instance_create_retry;
    const leaseMs = createLeaseMs({ maxAttempts: retry.max_attempts, baseDelayMs: retry.base_delay_ms, timeoutMs: retry.timeout_ms });
    return { instance, machine, now: ctx.clock.now(), createLeaseMs: leaseMs };
  },

  decide({ instance, now, createLeaseMs: leaseMs }: InstanceSnapshot) {
    const claim = claimCreate(instance, now, leaseMs);
    if (!claim) return {};
    const request: CreateRequest = { name: instance.name, machineId: instance.machineId, instanceId: instance.id, clientToken: instance.creation.clientToken };
    return { change: claim, effect: request, summary: 'create claimed' };
  },

  effects: {
    async perform(ctx: AppContext, request: CreateRequest): Promise<CreateOutcome> {
      const outcome = await ctx.agent.create(request);
      recordCreateOutcome(ctx.metrics, outcome);
      ctx.log.info('site agent create finished', { instanceId: request.instanceId, ...outcome });
      return outcome;
    },
    settle: ({ instance, machine, now }: InstanceSnapshot, _request: CreateRequest, outcome: CreateOutcome) => (machine ? completeCreate(instance, machine, outcome, now) : null),
  },
});
