import { hardwareHealthIssue } from '#domain/repair/agent-alerts.ts';
import type { Change, Versioned } from '#domain/core/change.ts';
import { addOverride } from '#domain/repair/machine-edits.ts';
import type { Machine, RepairLog, RepairLogEntry } from '#domain/core/model.ts';
import { hasOverride, SOURCES } from '#domain/core/overrides.ts';
import type { RepairStorm } from '#domain/core/responses.ts';
import { ageMs } from '#domain/core/time.ts';

// Fleet safety that the anchor systems leave to operators: a repair-storm breaker and recurring-fault escalation.

export type { RepairStorm };

/** The site's safety record (one item): the breaker and the quarantines inside its window. */
export interface SafetyState {
  repairStorm: RepairStorm;
  quarantines: string[];
  version: number;
}

export const initialSafety = (): SafetyState => ({ repairStorm: { state: 'closed', heldBack: [] }, quarantines: [], version: 0 });

export interface SafetyRules {
  maxQuarantines: number;
  maxFraction: number;
  windowMs: number;
  maxRepairs: number;
  repairWindowMs: number;
}

/** What a tenant's issue report does beyond quarantine. */
export type RepairPolicy =
  | { kind: 'request' }
  | { kind: 'off' }
  | { kind: 'hold-back'; trips: boolean }
  | { kind: 'escalate'; earlierReports: RepairLogEntry[] };

const within = (now: Date, windowMs: number) => (at: string) => ageMs(now, at) <= windowMs;

/** Count one more tenant-report quarantine; the breaker trips when it passes either limit. */
export function recordQuarantine(
  safety: SafetyState,
  fleetSize: number,
  machineId: string,
  now: Date,
  rules: SafetyRules,
): { safety: SafetyState; policy: RepairPolicy } {
  const quarantines = [...safety.quarantines.filter(within(now, rules.windowMs)), now.toISOString()];
  const storm = safety.repairStorm;
  if (storm.state === 'tripped') {
    return {
      safety: { ...safety, quarantines, repairStorm: { ...storm, heldBack: [...new Set([...storm.heldBack, machineId])] } },
      policy: { kind: 'hold-back', trips: false },
    };
  }
  const tooMany = quarantines.length > rules.maxQuarantines || quarantines.length / fleetSize > rules.maxFraction;
  if (!tooMany) return { safety: { ...safety, quarantines }, policy: { kind: 'request' } };
  return {
    safety: { ...safety, quarantines, repairStorm: { state: 'tripped', trippedAt: now.toISOString(), heldBack: [machineId] } },
    policy: { kind: 'hold-back', trips: true },
  };
}

/** A machine repaired `maxRepairs` times inside the window and reported again goes to people, not automation. */
export function shouldEscalate(log: RepairLog | undefined, now: Date, rules: SafetyRules): boolean {
  return (log?.completed ?? []).filter(within(now, rules.repairWindowMs)).length >= rules.maxRepairs;
}

export function trimLog(log: RepairLog | undefined, now: Date, rules: SafetyRules): RepairLog {
  return {
    reports: (log?.reports ?? []).filter((r) => within(now, rules.repairWindowMs)(r.at)),
    completed: (log?.completed ?? []).filter(within(now, rules.repairWindowMs)),
  };
}

/** What decides a reported fault's repair policy: the site's auto-repair switch, its breaker and its rules. */
export interface RepairPolicyInput {
  autoRepair: boolean;
  /** The safety record as read (null when there is none yet). */
  safety: SafetyState | null;
  fleetSize: number;
  now: Date;
  rules: SafetyRules;
}

/**
 * What a reported fault (a tenant's issue, the site agent's health alert) leads to beyond quarantine: an automated
 * repair request, unless auto-repair is off, the machine keeps coming back (escalation), or the repair-storm
 * breaker holds it back. Counting the quarantine changes the safety record (`safety`), which must commit with the
 * machine's change.
 */
export function repairPolicy(machine: Machine, input: RepairPolicyInput): { policy: RepairPolicy; safety?: SafetyState } {
  if (!input.autoRepair) return { policy: { kind: 'off' } };
  if (shouldEscalate(machine.repairLog, input.now, input.rules)) {
    return { policy: { kind: 'escalate', earlierReports: trimLog(machine.repairLog, input.now, input.rules).reports } };
  }
  return recordQuarantine(input.safety ?? initialSafety(), input.fleetSize, machine.id, input.now, input.rules);
}

/** How many entries of each kind a machine's repair log keeps: enough for any escalation window in practice. */
export const REPAIR_LOG_LIMIT = 20;

/** A report (a tenant's issue, a new hardware-health fault) or a completed repair, added to the machine's repair log. */
export function logged(log: RepairLog | undefined, entry: { report: RepairLogEntry } | { completedAt: string }): RepairLog {
  const reports = [...(log?.reports ?? []), ...('report' in entry ? [entry.report] : [])];
  const completed = [...(log?.completed ?? []), ...('completedAt' in entry ? [entry.completedAt] : [])];
  return { reports: reports.slice(-REPAIR_LOG_LIMIT), completed: completed.slice(-REPAIR_LOG_LIMIT) };
}

/** Only a provider closes the breaker; held-back machines are handed back for the caller to repair or not. */
export function resetStorm(safety: SafetyState): { safety: SafetyState; heldBack: string[] } {
  return { safety: { ...safety, quarantines: [], repairStorm: { state: 'closed', heldBack: [] } }, heldBack: safety.repairStorm.heldBack };
}

/**
 * One step of a provider's reset. Without `applyHeldBack` the breaker closes at once and the held-back machines stay
 * quarantined only. With it, each held-back machine is handed to repair in its own transaction together with the
 * safety record that no longer lists it, so a crash between steps leaves every machine either requested or still
 * listed, and a second reset picks up where the first stopped. The breaker closes last, once the list is empty:
 * closing first would let new reports through while the held-back ones still wait, and a crash would forget them.
 */
export type ResetStep = { kind: 'hand-over'; machineId: string; applied: boolean; change: Change } | { kind: 'close'; heldBack: string[]; change: Change };

/** The machine the next step of a reset with `applyHeldBack` is about, if any is still listed. */
export const nextHeldBack = (safety: SafetyState | null): string | undefined => safety?.repairStorm.heldBack[0];

/**
 * Close the breaker (`before` is the record as read, null when there is none yet). Guarded by the record's version,
 * so a report held back after the read makes the close lose its race instead of dropping that machine.
 */
export function closeStorm(before: SafetyState | null): ResetStep {
  const { safety, heldBack } = resetStorm(before ?? initialSafety());
  return { kind: 'close', heldBack, change: { safety: { before, after: safety }, history: [] } };
}

/**
 * Hand one held-back machine to repair: the repair request it would have had (carrying the tenant's issue), unless
 * it no longer needs one (gone, no longer quarantined, already requested, escalated, or under online repair, which
 * never runs alongside full repair). Either way it leaves the list in the same transaction.
 */
export function handOverHeldBack(before: SafetyState, machineId: string, machine: Machine | null, actor: string, now: Date): ResetStep {
  const storm = before.repairStorm;
  const after: SafetyState = { ...before, repairStorm: { ...storm, heldBack: storm.heldBack.filter((id) => id !== machineId) } };
  const safety = { before, after };
  if (!machine || !stillHeldBack(machine)) return { kind: 'hand-over', machineId, applied: false, change: { safety, history: [] } };
  const issue = machine.healthOverrides.find((o) => o.source === SOURCES.tenantReportedIssue)?.issue ?? hardwareHealthIssue(machine);
  const { change } = addOverride(
    machine,
    { template: 'request-repair', issue, message: 'Repair request held back by the repair-storm breaker, applied on reset' },
    actor,
    now,
  );
  return { kind: 'hand-over', machineId, applied: true, change: { ...change, safety } };
}

const stillHeldBack = (machine: Machine): boolean =>
  (hasOverride(machine, SOURCES.tenantReportedIssue) || hasOverride(machine, SOURCES.hardwareHealth)) &&
  ![SOURCES.repairRequest, SOURCES.outForRepair, SOURCES.onlineRepair].some((source) => hasOverride(machine, source));

// What a Change carries of this file's records (core/change.ts).
declare module '#domain/core/change.ts' {
  interface Change {
    safety?: Versioned<SafetyState>;
  }
}
