import type { Change } from '#domain/core/change.ts';
import { repairEvent } from '#domain/events/events.ts';
import type { HealthOverride, HistoryEntry, Issue, Machine, MachineValidation, ValidationResult } from '#domain/core/model.ts';
import { conflict } from '#domain/core/rejection.ts';
import { applyOverrideEdits, reportedFaultEdits } from '#domain/repair/repair.ts';
import { logged, type RepairPolicy } from '#domain/repair/safety.ts';
import { addMs, ageMs, iso } from '#domain/core/time.ts';
import type { validationReasons } from '#domain/core/vocabulary.ts';

// Validated return (docs/api.md "Validation"): a machine coming back from repair, maintenance or registration, or on
// a provider's demand, is allocatable again only once the site agent's validation passed. The record says where the
// validation stands (`Machine.validation`), so whoever asked for it (repair, maintenance) reads the outcome there.

export type ValidationReason = (typeof validationReasons)[number];
/** The reasons a site may require validation after (`[validation] after`); a provider's demand always validates. */
export type ValidationTrigger = Exclude<ValidationReason, 'provider'>;

export const VALIDATION_SOURCES = { running: 'validation', failed: 'validation-failed' } as const;

export interface ValidationRules {
  after: readonly ValidationTrigger[];
  suite: string;
  timeoutMs: number;
  /** How long one call to the agent may take: a crashed caller's claim lapses after it and the call is sent again. */
  callLeaseMs: number;
}

const VALIDATOR = 'site-agent';

/** Whether a machine returning for this reason must pass validation first. */
export const validationRequired = (rules: Pick<ValidationRules, 'after'>, reason: ValidationReason): boolean =>
  reason === 'provider' || rules.after.includes(reason);

export const validationRunning = (machine: Machine): boolean => machine.validation?.state === 'running';

/** A registered machine that has not passed a validation yet: it is commissioning. */
export const commissioning = (machine: Machine): boolean => machine.validation?.reason === 'registration' && machine.validation.state !== 'passed';

export interface ValidationRequest {
  id: string;
  reason: ValidationReason;
  suite: string;
  actor: string;
  at: string;
}

const runningOverride = (machine: Machine, request: ValidationRequest): HealthOverride => ({
  source: VALIDATION_SOURCES.running,
  mode: 'merge',
  alerts: [
    {
      id: 'Validation',
      target: machine.id,
      message: `Validation ${request.id} (${request.reason}, suite ${request.suite}) running`,
      tenantMessage: 'Machine validation in progress',
      classifications: ['PreventAllocations'],
    },
  ],
  createdBy: request.actor,
  createdAt: request.at,
});

/**
 * The machine with a validation started: running, out of allocation by its `validation` override, the agent's call
 * still to be sent. A failed validation's override goes: the new one judges the machine afresh. Composable, so a
 * release or a maintenance step can start one in its own change.
 */
export function withValidationStarted(machine: Machine, request: ValidationRequest): { machine: Machine; history: HistoryEntry[] } {
  const edits = { add: [runningOverride(machine, request)], remove: [VALIDATION_SOURCES.failed] };
  const { overrides, history } = applyOverrideEdits(machine, edits, request.actor, request.at);
  const validation: MachineValidation = {
    id: request.id,
    state: 'running',
    reason: request.reason,
    suite: request.suite,
    requestedAt: request.at,
    attempts: 0,
  };
  const requested: HistoryEntry = {
    machineId: machine.id,
    at: request.at,
    actor: request.actor,
    action: 'validation-requested',
    message: `validation ${request.id}: ${request.reason}, suite ${request.suite}`,
    changes: { validation: { from: machine.validation?.state, to: 'running' } },
  };
  return { machine: { ...machine, healthOverrides: overrides, validation, updatedAt: request.at }, history: [...history, requested] };
}

/** A new machine is commissioning from its registration: its first validation starts with it, no history of its own. */
export function commissioned(machine: Machine, request: Omit<ValidationRequest, 'reason'>): Machine {
  return withValidationStarted(machine, { ...request, reason: 'registration' }).machine;
}

/**
 * Ask for a validation: the change that starts it, or null when one is already running (the same request again).
 * A machine holding an instance is the tenant's: it is not validated under them.
 */
export function requestValidation(machine: Machine, request: ValidationRequest): Change | null {
  if (machine.instanceId !== undefined) {
    throw conflict('machine-in-use', `machine ${machine.id} holds instance ${machine.instanceId}; it is validated once released`);
  }
  if (validationRunning(machine)) return null;
  const started = withValidationStarted(machine, request);
  return { machines: [{ before: machine, after: started.machine }], history: started.history };
}

/** Nothing is sent to the agent while the machine is still held or being sanitized: it validates a clean machine. */
const readyToValidate = (machine: Machine): boolean =>
  machine.state === 'Ready' && machine.instanceId === undefined && machine.cleanup === undefined && machine.retired === undefined;

/** When the validation reconciler must look at the machine again, though nothing writes it. */
export function validationDueAt(machine: Machine): string | undefined {
  const validation = machine.validation;
  if (validation?.state !== 'running' || !readyToValidate(machine)) return undefined;
  return validation.reportDueBy ?? validation.leaseUntil ?? machine.updatedAt;
}

const withValidation = (machine: Machine, validation: MachineValidation, at: string): Machine => ({ ...machine, validation, updatedAt: at });

/** Claim sending the agent's call: the validation is running, not yet accepted by the agent, and no call holds it. */
export function claimValidationCall(machine: Machine, now: Date, rules: ValidationRules): Change | null {
  const validation = machine.validation;
  if (validation?.state !== 'running' || validation.askedAt || !readyToValidate(machine)) return null;
  if (validation.leaseUntil && ageMs(now, validation.leaseUntil) < 0) return null;
  const claimed = withValidation(machine, { ...validation, attempts: validation.attempts + 1, leaseUntil: iso(addMs(now, rules.callLeaseMs)) }, iso(now));
  return { machines: [{ before: machine, after: claimed }], history: [] };
}

export type ValidationCallOutcome = { ok: true } | { ok: false; reason: string };

/** Backoff of the next call after a failed one: doubling from 5 s, at most 5 minutes. */
export const validationCallRetryDelayMs = (attempts: number): number => Math.min(5_000 * 2 ** Math.max(0, attempts - 1), 300_000);

/** What the agent answered to the call claimed for validation `validationId`; null when that is no longer current. */
export function recordValidationCall(
  machine: Machine,
  validationId: string,
  outcome: ValidationCallOutcome,
  now: Date,
  rules: Pick<ValidationRules, 'timeoutMs'>,
): Change | null {
  const validation = machine.validation;
  if (validation?.id !== validationId || validation.state !== 'running' || validation.askedAt) return null;
  const at = iso(now);
  const { leaseUntil: _claimed, error: _previous, ...rest } = validation;
  const after: MachineValidation = outcome.ok
    ? { ...rest, askedAt: at, reportDueBy: iso(addMs(now, rules.timeoutMs)) }
    : { ...rest, leaseUntil: iso(addMs(now, validationCallRetryDelayMs(validation.attempts))), error: outcome.reason };
  return { machines: [{ before: machine, after: withValidation(machine, after, at) }], history: [] };
}

/**
 * A validation the agent accepted and has not reported within the timeout: ValidationStuck (once per validation),
 * and the agent is asked again (the same validation: a late report of it still counts).
 */
export function overrunValidation(machine: Machine, now: Date, rules: Pick<ValidationRules, 'timeoutMs'>): Change | null {
  const validation = machine.validation;
  if (validation?.state !== 'running' || !validation.askedAt || ageMs(now, validation.reportDueBy) < 0) return null;
  const at = iso(now);
  const { askedAt, reportDueBy: _overrun, ...rest } = validation;
  const after = withValidation(machine, { ...rest, stuckAt: validation.stuckAt ?? at }, at);
  const history: HistoryEntry[] = [
    {
      machineId: machine.id,
      at,
      actor: 'fleetward',
      action: 'validation-overdue',
      message: `validation ${validation.id} not reported ${Math.round(ageMs(now, askedAt) / 60_000)} min after the agent accepted it: asked again`,
    },
  ];
  if (!validation.stuckAt) {
    const detail = { validationId: validation.id, reason: validation.reason, suite: validation.suite, askedAt, timeoutMinutes: rules.timeoutMs / 60_000 };
    history.push(repairEvent('ValidationStuck', after, { actor: 'fleetward' }, at, undefined, detail));
  }
  return { machines: [{ before: machine, after }], history };
}

export interface ValidationReport {
  validationId: string;
  passed: boolean;
  results: ValidationResult[];
}

/** The current validation, or 409 `stale-validation`: a report for another one changes nothing. */
export function currentValidation(machine: Machine, validationId: string): MachineValidation {
  const validation = machine.validation;
  if (validation?.id !== validationId || validation.state !== 'running') {
    const current = validation?.state === 'running' ? `its current validation is ${validation.id}` : 'no validation of it is running';
    throw conflict('stale-validation', `validation ${validationId} is not machine ${machine.id}'s current one: ${current}`);
  }
  return validation;
}

/** The issue a failed validation reports: what repair is asked to fix. */
export function failedValidationIssue(validation: MachineValidation, failed: ValidationResult[]): Issue {
  const tests = failed.map((r) => r.test);
  return {
    category: 'HARDWARE',
    summary: `Validation failed: ${tests.length > 0 ? tests.join(', ') : 'no test named'}`,
    details: `validation ${validation.id} (${validation.reason}, suite ${validation.suite})`,
  };
}

/** One alert per failed test; a failure the agent named no test for still keeps the machine out. */
function failedOverride(machine: Machine, validation: MachineValidation, failed: ValidationResult[], at: string): HealthOverride {
  const tests = failed.length > 0 ? failed : [{ test: 'validation', passed: false, message: 'the agent reported a failure without a failed test' }];
  return {
    source: VALIDATION_SOURCES.failed,
    mode: 'merge',
    alerts: tests.map((r) => ({
      id: `ValidationFailed:${r.test}`,
      target: machine.id,
      message: r.message ? `${r.test}: ${r.message}` : `${r.test} failed`,
      tenantMessage: 'Machine failed validation',
      classifications: ['PreventAllocations'],
    })),
    issue: failedValidationIssue(validation, failed),
    createdBy: VALIDATOR,
    createdAt: at,
  };
}

/**
 * The agent's report on the current validation. Passed: the `validation` override goes. Failed: a reported fault,
 * quarantined by its `validation-failed` override, and by `policy` (the same breaker and escalation rules as a
 * tenant's report) sent to repair; the safety record `policy` came with commits beside this change.
 */
export function recordValidationReport(machine: Machine, report: ValidationReport, policy: RepairPolicy, now: Date): Change {
  const validation = currentValidation(machine, report.validationId);
  const at = iso(now);
  const finished: MachineValidation = {
    id: validation.id,
    state: report.passed ? 'passed' : 'failed',
    reason: validation.reason,
    suite: validation.suite,
    requestedAt: validation.requestedAt,
    finishedAt: at,
    results: report.results,
    attempts: validation.attempts,
    ...(validation.stuckAt ? { stuckAt: validation.stuckAt } : {}),
  };
  const detail = { validationId: validation.id, reason: validation.reason, suite: validation.suite, results: report.results };
  if (report.passed) {
    const { overrides, history } = applyOverrideEdits(machine, { add: [], remove: [VALIDATION_SOURCES.running] }, VALIDATOR, at);
    const after: Machine = { ...machine, healthOverrides: overrides, validation: finished, updatedAt: at };
    return {
      machines: [{ before: machine, after }],
      history: [...history, finishedEntry(machine, finished, at), repairEvent('ValidationPassed', after, { actor: VALIDATOR }, at, undefined, detail)],
    };
  }
  const failed = report.results.filter((r) => !r.passed);
  const quarantine = failedOverride(machine, validation, failed, at);
  const issue = quarantine.issue!;
  const edits = reportedFaultEdits(machine, quarantine, issue, policy, VALIDATOR, at);
  const reported = { ...machine, repairLog: logged(machine.repairLog, { report: { at, issue } }) };
  const { overrides, history } = applyOverrideEdits(reported, { add: edits.add, remove: [VALIDATION_SOURCES.running] }, VALIDATOR, at);
  const after: Machine = { ...reported, healthOverrides: overrides, validation: finished, updatedAt: at };
  const events = [
    repairEvent('ValidationFailed', after, { actor: VALIDATOR, issue }, at, undefined, detail),
    ...edits.events.map((type) => repairEvent(type, after, { actor: VALIDATOR, issue }, at, undefined, edits.eventDetail)),
  ];
  return { machines: [{ before: machine, after }], history: [...history, finishedEntry(machine, finished, at), ...events] };
}

function finishedEntry(machine: Machine, validation: MachineValidation, at: string): HistoryEntry {
  const failed = (validation.results ?? []).filter((r) => !r.passed).map((r) => r.test);
  return {
    machineId: machine.id,
    at,
    actor: VALIDATOR,
    action: validation.state === 'passed' ? 'validation-passed' : 'validation-failed',
    message: `validation ${validation.id} (${validation.reason})${failed.length > 0 ? `: failed ${failed.join(', ')}` : ''}`,
    changes: { validation: { from: 'running', to: validation.state } },
  };
}
