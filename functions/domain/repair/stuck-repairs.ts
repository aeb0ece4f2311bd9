import type { Change } from '#domain/core/change.ts';
import { repairEvent } from '#domain/events/events.ts';
import type { Machine } from '#domain/core/model.ts';
import { SOURCES } from '#domain/core/overrides.ts';
import { ageMs } from '#domain/core/time.ts';

// Repairs nobody finishes: a repair request no repair tenant claims within the claim SLA, or a claimed machine
// whose repair runs past its `repair_eta` label or the repair SLA. Each episode is alerted once.

export interface RepairSla {
  claimMs: number;
  repairMs: number;
}

export type RepairStage = 'unclaimed' | 'in-repair';

export interface RepairWatch {
  machineId: string;
  stage: RepairStage;
  since: string;
  waitingMinutes: number;
  /** When it counts as stuck. */
  deadline: string;
  stuck: boolean;
  /** Identifies the episode: a new claim or a new request starts a new one. */
  episode: string;
}

/** Where a machine with a repair request is, or null when it has none. */
export function repairStage(machine: Machine): { stage: RepairStage; since: string } | null {
  const request = machine.healthOverrides.find((o) => o.source === SOURCES.repairRequest);
  if (!request) return null;
  if (machine.instanceId && machine.assignedAt && machine.assignedAt > request.createdAt) return { stage: 'in-repair', since: machine.assignedAt };
  return { stage: 'unclaimed', since: request.createdAt };
}

export function watchRepair(machine: Machine, now: Date, sla: RepairSla): RepairWatch | null {
  const at = repairStage(machine);
  if (!at) return null;
  const since = Date.parse(at.since);
  let deadline = since + (at.stage === 'unclaimed' ? sla.claimMs : sla.repairMs);
  if (at.stage === 'in-repair') {
    const eta = /^\d{4}-\d{2}-\d{2}/.test(machine.labels.repair_eta ?? '') ? Date.parse(machine.labels.repair_eta!) : Number.NaN;
    if (Number.isFinite(eta)) deadline = Math.min(deadline, eta);
  }
  return {
    machineId: machine.id,
    ...at,
    waitingMinutes: Math.floor(Math.max(0, ageMs(now, at.since)) / 60_000),
    deadline: new Date(deadline).toISOString(),
    stuck: now.getTime() > deadline,
    episode: `${at.stage}#${at.since}`,
  };
}

/** Stuck and not yet alerted for this episode. */
export const needsStuckAlert = (machine: Machine, watch: RepairWatch | null): watch is RepairWatch =>
  watch?.stuck === true && machine.stuckAlerted !== watch.episode;

/** Alert a stuck repair: the machine remembers the episode, so the RepairStuck event goes out once for it. */
export function stuckRepairAlert(machine: Machine, watch: RepairWatch, at: string): Change {
  const { stage, since, waitingMinutes } = watch;
  const event = repairEvent('RepairStuck', machine, { actor: 'sweep' }, at, machine.instanceId, { stage, since, waitingMinutes });
  return { machines: [{ before: machine, after: { ...machine, stuckAlerted: watch.episode } }], history: [event] };
}
