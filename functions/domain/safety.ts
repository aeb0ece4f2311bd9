import type { Issue } from './model.ts';
import type { RepairStorm } from './responses.ts';
import { ageMs } from './time.ts';

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

export interface RepairLogEntry {
  at: string;
  issue?: Issue;
}

/** A machine's recent repair record, for escalation: reports and completed repairs inside the window. */
export interface RepairLog {
  reports: RepairLogEntry[];
  completed: string[];
}

const within = (now: Date, windowMs: number) => (at: string) => ageMs(now, at) <= windowMs;

/** Count one more tenant-report quarantine; the breaker trips when it passes either limit. */
export function recordQuarantine(safety: SafetyState, fleetSize: number, machineId: string, now: Date, rules: SafetyRules): { safety: SafetyState; policy: RepairPolicy } {
  const quarantines = [...safety.quarantines.filter(within(now, rules.windowMs)), now.toISOString()];
  const storm = safety.repairStorm;
  if (storm.state === 'tripped') {
    return { safety: { ...safety, quarantines, repairStorm: { ...storm, heldBack: [...new Set([...storm.heldBack, machineId])] } }, policy: { kind: 'hold-back', trips: false } };
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

/** Only a provider closes the breaker; held-back machines are handed back for the caller to repair or not. */
export function resetStorm(safety: SafetyState): { safety: SafetyState; heldBack: string[] } {
  return { safety: { ...safety, quarantines: [], repairStorm: { state: 'closed', heldBack: [] } }, heldBack: safety.repairStorm.heldBack };
}
