import type { Change } from '#domain/core/change.ts';
import type { Instance } from '#domain/core/model.ts';
import { awaitsPowerCall, claimPowerCall, powerDueAt, recordPowerCall, type PowerCallOutcome, type PowerRules } from '#domain/instances/power.ts';
import { powerRules, type AppContext } from '#runtime/context.ts';
import { committedById, defineReconciler, fellDue } from '#reconcilers/reconciler.ts';
import type { PowerRequest } from '#site/agent-contract.ts';

// A tenant's power action gets the site agent's call: claimed under a lease, sent, and its answer recorded. Each step
// is one conditional write of the instance; a crash between them leaves a lease that lapses, and the due index
// brings the instance back here, so the call is sent again (at least once: a second cycle is the price of a crash).

export interface PowerSnapshot {
  instance: Instance;
  now: Date;
  rules: PowerRules;
}

interface PowerCall {
  instanceId: string;
  powerId: string;
  siteName: string;
  request: PowerRequest;
}

export const powerReconciler = defineReconciler({
  kind: 'power',
  watches: {
    instance: {
      // An action just requested is sent at once; a lease or a retry's wait counts once it fell due.
      concerns: (before, after, id) => {
        if (after === null) return [];
        if (awaitsPowerCall(after)) return [id];
        return fellDue(before, after) && powerDueAt(after) !== undefined ? [id] : [];
      },
      dueAt: powerDueAt,
    },
  },

  async load(ctx: AppContext, id: string): Promise<PowerSnapshot | null> {
    const instance = await ctx.store.getInstance(id);
    return instance && { instance, now: ctx.clock.now(), rules: powerRules(ctx.config) };
  },

  advance: (snapshot: PowerSnapshot, change: Change, now: Date): PowerSnapshot => ({
    ...snapshot,
    instance: committedById(change.instances, snapshot.instance.id) ?? snapshot.instance,
    now,
  }),

  decide({ instance, now, rules }: PowerSnapshot) {
    const claim = claimPowerCall(instance, now, rules);
    if (!claim) return {};
    // The claim either holds the call now, or ends the action (its instance stopped running, or its calls ran out).
    const power = committedById(claim.instances, instance.id)?.power;
    if (power?.phase !== 'in-flight') return { change: claim, summary: `power ${instance.power?.action} given up` };
    const call: PowerCall = { instanceId: instance.id, powerId: power.id, siteName: instance.siteName, request: { action: power.action } };
    return { change: claim, effect: call, summary: `power ${power.action} claimed` };
  },

  effects: {
    async perform(ctx: AppContext, call: PowerCall): Promise<PowerCallOutcome> {
      const outcome = await ctx.agent.power(call.siteName, call.request);
      ctx.log.info('site agent power action finished', { instanceId: call.instanceId, action: call.request.action, ...outcome });
      return outcome;
    },
    settle: ({ instance, now }: PowerSnapshot, call: PowerCall, outcome: PowerCallOutcome) => recordPowerCall(instance, call.powerId, outcome, now),
  },
});
