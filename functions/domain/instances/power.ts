import type { Change } from '#domain/core/change.ts';
import type { HistoryEntry, Instance, InstancePower } from '#domain/core/model.ts';
import { conflict } from '#domain/core/rejection.ts';
import { addMs, ageMs, iso } from '#domain/core/time.ts';
import type { powerActions } from '#site/agent-contract.ts';
import type { powerStates } from '#domain/core/vocabulary.ts';

// A tenant's power action on an instance (docs/api.md "Power"): recorded on the instance first, in the transaction
// that writes its history entry, then sent to the site agent by the power reconciler under a lease, and its outcome
// recorded. A crash between any two steps leaves a pending action or a lapsed lease, which the due index brings back.

export type PowerAction = (typeof powerActions)[number];
export type PowerState = (typeof powerStates)[number];

export interface PowerRules {
  /** How long one call may take: a crashed caller's claim lapses after it and the call is sent again. */
  callLeaseMs: number;
  /** Calls sent for one action before it is given up as failed. */
  maxAttempts: number;
}

/** The instance statuses a power action applies to: a running instance, online repair included. */
const POWERABLE: ReadonlySet<Instance['status']> = new Set(['Ready', 'Repairing']);

/** Backoff of the next call after a failed one: doubling from 2 s, at most a minute. */
export const powerRetryDelayMs = (attempts: number): number => Math.min(2_000 * 2 ** Math.max(0, attempts - 1), 60_000);

const inProgress = (power: InstancePower | undefined): boolean => power?.phase === 'pending' || power?.phase === 'in-flight';

const entry = (instance: Instance, at: string, actor: string, action: string, message: string): HistoryEntry => ({
  machineId: instance.machineId,
  at,
  actor,
  action,
  instanceId: instance.id,
  message,
});

/**
 * Record a tenant's power action: 409 `invalid-state` unless the instance runs (Ready or Repairing), 409
 * `power-action-in-progress` while an earlier one is not done. The instance and its machine's history entry commit
 * together; the agent is called by the power reconciler.
 */
export function requestPower(instance: Instance, action: PowerAction, request: { id: string; actor: string; now: Date }): Change {
  if (!POWERABLE.has(instance.status)) {
    throw conflict('invalid-state', `instance ${instance.id} is ${instance.status}; power actions need Ready or Repairing`);
  }
  if (inProgress(instance.power)) {
    throw conflict('power-action-in-progress', `instance ${instance.id} has a ${instance.power!.action} action not done yet; ask again once it is`);
  }
  const at = iso(request.now);
  const previous = instance.power?.state === 'off' ? 'off' : 'on';
  const power: InstancePower = {
    id: request.id,
    action,
    state: action === 'cycle' ? 'cycling' : previous,
    previous,
    phase: 'pending',
    requestedAt: at,
    requestedBy: request.actor,
    attempts: 0,
  };
  return {
    instances: [{ before: instance, after: { ...instance, power, updatedAt: at } }],
    history: [entry(instance, at, request.actor, 'power-requested', `power ${action} requested`)],
  };
}

/** An action still to be sent, or whose call's lease lapsed: when the power reconciler must look again. */
export function powerDueAt(instance: Instance): string | undefined {
  const power = instance.power;
  if (!power || !inProgress(power)) return undefined;
  return power.leaseUntil ?? instance.updatedAt;
}

/** Waiting for its first call, which nothing but the request announces: sent at once. */
export const awaitsPowerCall = (instance: Instance): boolean => instance.power?.phase === 'pending' && instance.power.leaseUntil === undefined;

function finished(instance: Instance, power: InstancePower, outcome: { ok: true } | { ok: false; reason: string }, at: string): Change {
  const { leaseUntil: _lease, ...rest } = power;
  const after: InstancePower = outcome.ok
    ? { ...rest, phase: 'accepted', state: power.action === 'off' ? 'off' : 'on', finishedAt: at }
    : { ...rest, phase: 'failed', state: power.previous, finishedAt: at, error: outcome.reason };
  const message = outcome.ok ? `power ${power.action} accepted by the site agent` : `power ${power.action} failed: ${outcome.reason}`;
  return {
    instances: [{ before: instance, after: { ...instance, power: after, updatedAt: at } }],
    history: [entry(instance, at, 'site-agent', outcome.ok ? 'power-accepted' : 'power-failed', message)],
  };
}

/**
 * Claim sending the agent's call: the action is pending (or its call's lease lapsed with no outcome recorded) and
 * its wait is over. An instance that stopped running meanwhile fails the action; one out of attempts, too.
 */
export function claimPowerCall(instance: Instance, now: Date, rules: PowerRules): Change | null {
  const power = instance.power;
  if (!power || !inProgress(power)) return null;
  if (power.leaseUntil && ageMs(now, power.leaseUntil) < 0) return null;
  const at = iso(now);
  if (!POWERABLE.has(instance.status)) return finished(instance, power, { ok: false, reason: `instance is ${instance.status}` }, at);
  if (power.attempts >= rules.maxAttempts) {
    const reason = power.error ?? `no answer from the site agent after ${power.attempts} attempt(s)`;
    return finished(instance, power, { ok: false, reason }, at);
  }
  const claimed: InstancePower = { ...power, phase: 'in-flight', attempts: power.attempts + 1, leaseUntil: iso(addMs(now, rules.callLeaseMs)) };
  return { instances: [{ before: instance, after: { ...instance, power: claimed, updatedAt: at } }], history: [] };
}

/** What the agent answered: accepted, refused (its no: the action failed), or no answer (tried again after a backoff). */
export type PowerCallOutcome = { kind: 'accepted' } | { kind: 'refused'; reason: string } | { kind: 'error'; reason: string };

/** The outcome of the call claimed for action `powerId`; null when that action is no longer in flight. */
export function recordPowerCall(instance: Instance, powerId: string, outcome: PowerCallOutcome, now: Date): Change | null {
  const power = instance.power;
  if (power?.id !== powerId || power.phase !== 'in-flight') return null;
  const at = iso(now);
  if (outcome.kind === 'accepted') return finished(instance, power, { ok: true }, at);
  if (outcome.kind === 'refused') return finished(instance, power, { ok: false, reason: outcome.reason }, at);
  const retry: InstancePower = { ...power, phase: 'pending', leaseUntil: iso(addMs(now, powerRetryDelayMs(power.attempts))), error: outcome.reason };
  return { instances: [{ before: instance, after: { ...instance, power: retry, updatedAt: at } }], history: [] };
}

/** The action as the API shows it: where it stands, not how the calls went. */
export function powerView(power: InstancePower) {
  const result = power.phase === 'accepted' || power.phase === 'failed' ? power.phase : ('pending' as const);
  return {
    state: power.state,
    action: power.action,
    requestedAt: power.requestedAt,
    result,
    ...(power.finishedAt ? { finishedAt: power.finishedAt } : {}),
    ...(power.phase === 'failed' && power.error ? { error: power.error } : {}),
  };
}
