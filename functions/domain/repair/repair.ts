import { allocatability, type HeartbeatView } from '#domain/core/health.ts';
import type { HealthOverride, HistoryEntry, Issue, Machine } from '#domain/core/model.ts';
import { buildOverride, hasOverride, SOURCES, withOverride, withoutOverride } from '#domain/core/overrides.ts';
import type { RepairPolicy } from '#domain/repair/safety.ts';

// What a release does to a machine's health overrides (API.md; seeds 000 FAQ Q1–Q5 and 001 "Completion outcomes").

export type RepairEventType = 'MachineQuarantined' | 'RepairRequested' | 'RepairCompleted' | 'RepairFailed' | 'RepairEscalated' | 'RepairStormDetected';

export interface ReleaseReport {
  actor: string;
  issue?: Issue | undefined;
  isRepairTenant: boolean;
  /** What a regular tenant's issue leads to beyond quarantine: auto-repair, the storm breaker, escalation. */
  policy: RepairPolicy;
  /** The site validates after repair: a completed repair starts this validation instead of returning to the pool. */
  validateAfterRepair?: { validationId: string; suite: string } | undefined;
}

export interface OverrideEdits {
  add: HealthOverride[];
  remove: string[];
  events: RepairEventType[];
  /** Added to every event's detail. */
  eventDetail?: Record<string, unknown>;
}

export const incompleteRepairIssue = (status: string | undefined): Issue => ({
  category: 'OTHER',
  summary: 'RepairSystem processing incomplete',
  details: `Machine released by repair tenant but repair status is: ${status ?? 'Unknown'}`,
});

const isCompleted = (status: string | undefined) => status?.trim().toLowerCase() === 'completed';

/**
 * The release decision table. A regular tenant's issue quarantines the machine and, with auto-repair on, asks for
 * repair. A repair tenant's release ends the repair: Completed clears it (or keeps the new issue), anything else
 * keeps the machine quarantined. A repair tenant's release never asks for repair again: no repair loops.
 */
export function releaseOverrideEdits(machine: Machine, report: ReleaseReport, at: string): OverrideEdits {
  const reported = (issue: Issue) => buildOverride(machine.id, { template: 'tenant-reported-issue', issue, tenantMessage: issue.summary }, report.actor, at);

  if (!report.isRepairTenant) {
    if (!report.issue) return { add: [], remove: [], events: [] };
    return reportedFaultEdits(machine, reported(report.issue), report.issue, report.policy, report.actor, at);
  }

  if (!hasOverride(machine, SOURCES.repairRequest)) {
    return report.issue ? { add: [reported(report.issue)], remove: [], events: ['MachineQuarantined'] } : { add: [], remove: [], events: [] };
  }
  const status = machine.labels.repair_status;
  if (isCompleted(status)) {
    return report.issue
      ? { add: [reported(report.issue)], remove: [SOURCES.repairRequest], events: ['RepairCompleted', 'MachineQuarantined'] }
      : { add: [], remove: [SOURCES.repairRequest, SOURCES.tenantReportedIssue], events: ['RepairCompleted'] };
  }
  return {
    add: [reported(report.issue ?? incompleteRepairIssue(status))],
    remove: [SOURCES.repairRequest],
    events: ['RepairFailed'],
  };
}

/**
 * A reported fault (a tenant's issue, the site agent's health alert): the quarantine override it comes with and, by
 * the repair policy, a repair request, an escalation out for repair, or the request held back by the breaker. One
 * rule for every kind of report, so a fault the agent finds is handled as one a tenant reports.
 */
export function reportedFaultEdits(machine: Machine, quarantine: HealthOverride, issue: Issue, policy: RepairPolicy, actor: string, at: string): OverrideEdits {
  const add = [quarantine];
  const events: RepairEventType[] = ['MachineQuarantined'];
  if (policy.kind === 'request') {
    add.push(buildOverride(machine.id, { template: 'request-repair', issue, message: `Automated repair for: ${issue.summary}` }, actor, at));
    events.push('RepairRequested');
  } else if (policy.kind === 'escalate') {
    const repaired = policy.earlierReports.length > 0 ? 'repeatedly' : 'before';
    const message = `Escalated: repaired ${repaired} and reported again; needs people, not another automated repair`;
    add.push(buildOverride(machine.id, { template: 'out-for-repair', issue, message }, actor, at));
    events.push('RepairEscalated');
    return { add, remove: [], events, eventDetail: { earlierReports: policy.earlierReports } };
  } else if (policy.kind === 'hold-back') {
    if (policy.trips) events.push('RepairStormDetected');
    return { add, remove: [], events, eventDetail: { repairRequestHeldBack: true } };
  }
  return { add, remove: [], events };
}

/** Apply edits; each override added or removed gets its own history entry with actor and message. */
export function applyOverrideEdits(
  machine: Machine,
  edits: Pick<OverrideEdits, 'add' | 'remove'>,
  actor: string,
  at: string,
  instanceId?: string,
): { overrides: HealthOverride[]; history: HistoryEntry[] } {
  let overrides = machine.healthOverrides;
  const history: HistoryEntry[] = [];
  for (const source of edits.remove) {
    if (!overrides.some((o) => o.source === source)) continue;
    overrides = withoutOverride(overrides, source);
    history.push({
      machineId: machine.id,
      at,
      actor,
      action: 'health-override-removed',
      ...(instanceId ? { instanceId } : {}),
      changes: { healthOverride: { from: source } },
    });
  }
  for (const override of edits.add) {
    overrides = withOverride(overrides, override);
    history.push({
      machineId: machine.id,
      at,
      actor,
      action: 'health-override-added',
      ...(instanceId ? { instanceId } : {}),
      message: override.alerts[0]?.message ?? override.source,
      ...(override.issue ? { issue: override.issue } : {}),
      changes: { healthOverride: { to: override.source } },
    });
  }
  return { overrides, history };
}

// The quarantines a repair request is about: a tenant's report, or the site agent's health alert (which stays while
// the agent reports it, so the repair tenant must get past it to repair the machine).
const ADMITTED_FOR_REPAIR = new Set([SOURCES.repairRequest, SOURCES.tenantReportedIssue, SOURCES.hardwareHealth].map((source) => `health-override:${source}`));

/**
 * Why a repair tenant may not claim this machine (empty: it may). A repair request admits a repair tenant past
 * the quarantine it belongs to, never past anything else (out-for-repair, a stale heartbeat, another instance).
 */
export function repairClaimBlockers(machine: Machine, heartbeat: HeartbeatView, now: Date): string[] {
  const blockers = allocatability(machine, heartbeat, now).notAllocatableReasons.filter((r) => !ADMITTED_FOR_REPAIR.has(r));
  if (!hasOverride(machine, SOURCES.repairRequest)) blockers.unshift('no-repair-request');
  return blockers;
}
