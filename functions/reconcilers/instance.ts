import { claimCreate, claimCreateCheck, completeCreate, createLeaseMs, recordCreateCheck, type CreateOutcome } from '#domain/instances.ts';
import type { Instance, Machine } from '#domain/model.ts';
import type { InstanceStatusOutcome } from '#domain/status-checks.ts';
import type { AppContext, SiteAgent } from '#services/context.ts';
import { defineReconciler } from './reconciler.ts';
import { recordCreateOutcome } from '#services/create-metrics.ts';

// A Provisioning instance gets the site agent's create: claimed under a lease (so a duplicated trigger never sends a
// second one), sent, and its outcome recorded: Ready, or Failed with its machine sent through cleanup. A claim that
// lapsed with no outcome recorded makes the controller ask the agent before sending the create again.

export interface InstanceSnapshot {
  instance: Instance;
  /** Its machine, read only while a create is in flight: recording the outcome needs it. */
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
      concerns: (_before, _after, id) => [id],
      dueAt(instance) {
        if (instance.status !== 'Provisioning') return undefined;
        const { creation } = instance;
        if (creation.phase === 'pending') return instance.updatedAt;
        // A claim whose holder crashed lapses: the agent is then asked where the create stands.
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
