import { auditEntry, auditTargets, type Requester } from '#domain/events/audit.ts';
import type { Machine, MachineValidation } from '#domain/core/model.ts';
import { currentValidation, recordValidationReport, requestValidation, type ValidationReport } from '#domain/repair/validation.ts';
import type { AppContext } from '#runtime/context.ts';
import { retryOnStale } from '#runtime/retry-on-stale.ts';
import { reportedFaultPolicy, requireMachine, validationIdentity } from '#services/instances.ts';

// Validated return (docs/api.md "Validation"): a provider's demand, and the site agent's report. The calls to the agent
// are the validation reconciler's (reconcilers/validation.ts); repair and registration start a validation in their
// own change (domain/repair/validation.ts `withValidationStarted`).

/** A provider asks for a validation (reason `provider`): the one running already answers the same request again. */
export async function requestProviderValidation(ctx: AppContext, machineId: string, by: Requester): Promise<MachineValidation> {
  return retryOnStale(async () => {
    const machine = await requireMachine(ctx, machineId);
    const now = ctx.clock.now();
    const { validationId: id, suite } = validationIdentity(ctx);
    const change = requestValidation(machine, { id, suite, reason: 'provider', actor: by.actor, at: now.toISOString() });
    if (!change) return machine.validation!;
    const after = change.machines![0]!.after;
    const audit = auditEntry(by, now, 'validation-requested', auditTargets.machine(machineId), { after: { validationId: id, suite } });
    await ctx.store.commit({ ...change, audit });
    return after.validation!;
  });
}

/**
 * The agent's report on a machine's current validation; one for any other answers 409 `stale-validation` and changes
 * nothing. A failure is a reported fault: its repair policy (and the safety record counting it) commits with it.
 */
export async function reportValidation(ctx: AppContext, machineId: string, report: ValidationReport): Promise<Machine> {
  return retryOnStale(async () => {
    const machine = await requireMachine(ctx, machineId);
    currentValidation(machine, report.validationId);
    const { policy, safety } = report.passed ? { policy: { kind: 'off' as const }, safety: undefined } : await reportedFaultPolicy(ctx, machine);
    const change = recordValidationReport(machine, report, policy, ctx.clock.now());
    await ctx.store.commit({ ...change, ...(safety ? { safety } : {}) });
    return { ...change.machines![0]!.after, version: machine.version + 1 };
  });
}
