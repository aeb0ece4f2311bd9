import type { Change } from '#domain/core/change.ts';
import type { Machine } from '#domain/core/model.ts';
import {
  claimValidationCall,
  overrunValidation,
  recordValidationCall,
  validationDueAt,
  type ValidationCallOutcome,
  type ValidationRules,
} from '#domain/repair/validation.ts';
import { validationRules, type AppContext } from '#runtime/context.ts';
import { committedById, defineReconciler, fellDue } from '#reconcilers/reconciler.ts';
import type { ValidationRequest } from '#site/agent-contract.ts';

// A machine whose validation runs gets the site agent's call: claimed under a lease, sent, and its answer recorded.
// The agent's report (an API call) then ends the validation; a report overdue past the timeout raises ValidationStuck
// once and the agent is asked again. Each step is one conditional write of the machine; a crash at any of them
// leaves a lease that lapses or a deadline that falls due, and the due index brings the machine back here.

export interface ValidationSnapshot {
  machine: Machine;
  now: Date;
  rules: ValidationRules;
}

interface ValidationCall {
  machineId: string;
  request: ValidationRequest;
}

/** A validation waits for its call to be claimed: running, not accepted by the agent, no call holding it. */
const awaitsCall = (machine: Machine): boolean => {
  const validation = machine.validation;
  return validation?.state === 'running' && !validation.askedAt && !validation.leaseUntil && validationDueAt(machine) !== undefined;
};

export const validationReconciler = defineReconciler({
  kind: 'validation',
  watches: {
    machine: {
      // A validation just requested (or whose machine just became clean) is sent at once; a lease or a report
      // deadline waits until it fell due.
      concerns: (before, after, id) => {
        if (after === null) return [];
        if (awaitsCall(after)) return [id];
        return fellDue(before, after) && validationDueAt(after) !== undefined ? [id] : [];
      },
      dueAt: validationDueAt,
    },
  },

  async load(ctx: AppContext, id: string): Promise<ValidationSnapshot | null> {
    const machine = await ctx.store.getMachine(id);
    return machine && { machine, now: ctx.clock.now(), rules: validationRules(ctx.config) };
  },

  advance: (snapshot: ValidationSnapshot, change: Change, now: Date): ValidationSnapshot => ({
    ...snapshot,
    machine: committedById(change.machines, snapshot.machine.id) ?? snapshot.machine,
    now,
  }),

  decide({ machine, now, rules }: ValidationSnapshot) {
    const overrun = overrunValidation(machine, now, rules);
    if (overrun) return { change: overrun, summary: 'validation report overdue: asked again' };
    const claim = claimValidationCall(machine, now, rules);
    const validation = machine.validation;
    if (!claim || !validation) return {};
    const request: ValidationRequest = { validationId: validation.id, suite: validation.suite, reason: validation.reason };
    return { change: claim, effect: { machineId: machine.id, request } satisfies ValidationCall, summary: 'validation call claimed' };
  },

  effects: {
    async perform(ctx: AppContext, call: ValidationCall): Promise<ValidationCallOutcome> {
      const outcome = await ctx.agent.validate(call.machineId, call.request);
      ctx.log.info('site agent validation request finished', { machineId: call.machineId, ...call.request, ...outcome });
      return outcome;
    },
    settle: ({ machine, now, rules }: ValidationSnapshot, call: ValidationCall, outcome: ValidationCallOutcome) =>
      recordValidationCall(machine, call.request.validationId, outcome, now, rules),
  },
});
