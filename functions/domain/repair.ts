import { allocatability, type HeartbeatView } from './health.ts';
import type { HealthOverride, HistoryEntry, Issue, Machine } from './model.ts';
import { buildOverride, hasOverride, SOURCES, withOverride, withoutOverride } from './overrides.ts';
import type { RepairPolicy } from './safety.ts';

// What a release does to a machine's health overrides (API.md; seeds 000 FAQ Q1–Q5 and 001 "Completion outcomes").

export type RepairEventType = 'MachineQuarantined' | 'RepairRequested' | 'RepairCompleted' | 'RepairFailed' | 'RepairEscalated' | 'RepairStormDetected';

export interface ReleaseReport {
  actor: string;
  issue?: Issue | undefined;
  isRepairTenant: boolean;
  /** What a regular tenant's issue leads to beyond quarantine: auto-repair, the storm breaker, escalation. */
  policy: RepairPolicy;
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
  const reported = (issue: Issue) =>
    buildOverride(machine.id, { template: 'tenant-reported-issue', issue, tenantMessage: issue.summary }, report.actor, at);

  if (!report.isRepairTenant) {
    if (!report.issue) return { add: [], remove: [], events: [] };
    const add = [reported(report.issue)];
    const events: RepairEventType[] = ['MachineQuarantined'];
    const policy = report.policy;
    if (policy.kind === 'request') {
      add.push(buildOverride(machine.id, { template: 'request-repair', issue: report.issue, message: `Automated repair for: ${report.issue.summary}` }, report.actor, at));
      events.push('RepairRequested');
    } else if (policy.kind === 'escalate') {
      const message = `Escalated: repaired ${policy.earlierReports.length > 0 ? 'repeatedly' : 'before'} and reported again; needs people, not another automated repair`;
      add.push(buildOverride(machine.id, { template: 'out-for-repair', issue: report.issue, message }, report.actor, at));
      events.push('RepairEscalated');
      return { add, remove: [], events, eventDetail: { earlierReports: policy.earlierReports } };
    } else if (policy.kind === 'hold-back') {
      if (policy.trips) events.push('RepairStormDetected');
      return { add, remove: [], events, eventDetail: { repairRequestHeldBack: true } };
    }
    return { add, remove: [], events };
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
    history.push({ machineId: machine.id, at, actor, action: 'health-override-removed', ...(instanceId ? { instanceId } : {}), changes: { healthOverride: { from: source } } });
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

const ADMITTED_FOR_REPAIR = new Set([`health-override:${SOURCES.repairRequest}`, `health-override:${SOURCES.tenantReportedIssue}`]);

/**
 * Why a repair tenant may not claim this machine (empty: it may). A repair request admits a repair tenant past
 * the quarantine it belongs to, never past anything else (out-for-repair, a stale heartbeat, another instance).
 */
export function repairClaimBlockers(machine: Machine, heartbeat: HeartbeatView, now: Date): string[] {
  const blockers = allocatability(machine, heartbeat, now).notAllocatableReasons.filter((r) => !ADMITTED_FOR_REPAIR.has(r));
  if (!hasOverride(machine, SOURCES.repairRequest)) blockers.unshift('no-repair-request');
  return blockers;
}
