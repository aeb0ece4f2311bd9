import { alertsIssue, hardwareHealthOverride, sameAlerts, type AgentAlert } from '#domain/repair/agent-alerts.ts';
import { repairEvent } from '#domain/events/events.ts';
import type { HistoryEntry, Machine } from '#domain/core/model.ts';
import { hasOverride, SOURCES } from '#domain/core/overrides.ts';
import { applyOverrideEdits, reportedFaultEdits, type OverrideEdits } from '#domain/repair/repair.ts';
import { logged, repairPolicy, type RepairPolicyInput, type SafetyState } from '#domain/repair/safety.ts';

// A machine's `hardware-health` override kept in line with what the site agent reports about it. The agent owns it:
// it comes when the agent reports an alert that prevents allocation, follows the alerts while they change, and goes
// when the agent, still seeing the machine, reports none. A repair does not clear it; the agent does.

export const SITE_AGENT = 'site-agent';

export interface HardwareHealthStep {
  after: Machine;
  history: HistoryEntry[];
  /** The safety record after counting this fault's quarantine, when it was counted. */
  safety?: SafetyState;
}

/** Repair already in hand (requested, escalated, or under online repair, which never runs alongside full repair). */
const repairInHand = (machine: Machine) => [SOURCES.repairRequest, SOURCES.outForRepair, SOURCES.onlineRepair].some((source) => hasOverride(machine, source));

/**
 * The change `reported` calls for on the machine, or null when it has none. `reported` is undefined when the agent
 * does not list the machine at all: a machine it no longer sees keeps what it had (the agent said nothing about it
 * being well, and the stale heartbeat keeps it out of allocation anyway).
 *
 * Only a fault newly added gets the repair policy, exactly as a tenant's report: so while the override stays,
 * nothing is requested again (no repair loops), and an override that cleared and comes back is a new fault, which
 * counts towards escalation.
 */
export function hardwareHealthStep(
  machine: Machine,
  reported: readonly AgentAlert[] | undefined,
  policy: RepairPolicyInput,
  at: string,
): HardwareHealthStep | null {
  if (reported === undefined) return null;
  const current = machine.healthOverrides.find((o) => o.source === SOURCES.hardwareHealth);
  if (reported.length === 0) {
    if (!current) return null;
    return edited(machine, { add: [], remove: [SOURCES.hardwareHealth], events: [] }, at);
  }
  if (current) {
    const now = current.alerts.map(({ id, message, classifications }) => ({ id, message, classifications }));
    if (sameAlerts(now, reported)) return null;
    return edited(machine, { add: [hardwareHealthOverride(machine.id, reported, current.createdAt)], remove: [], events: [] }, at);
  }
  const issue = alertsIssue(reported);
  const decided = repairInHand(machine) ? { policy: { kind: 'off' as const } } : repairPolicy(machine, policy);
  const edits = reportedFaultEdits(machine, hardwareHealthOverride(machine.id, reported, at), issue, decided.policy, SITE_AGENT, at);
  const step = edited({ ...machine, repairLog: logged(machine.repairLog, { report: { at, issue } }) }, edits, at);
  const events = edits.events.map((type) => repairEvent(type, step.after, { actor: SITE_AGENT, issue }, at, undefined, edits.eventDetail));
  return { ...step, history: [...step.history, ...events], ...(decided.safety ? { safety: decided.safety } : {}) };
}

function edited(machine: Machine, edits: OverrideEdits, at: string): HardwareHealthStep {
  const { overrides, history } = applyOverrideEdits(machine, edits, SITE_AGENT, at);
  return { after: { ...machine, healthOverrides: overrides, updatedAt: at }, history };
}
