import type { Classification, HealthOverride, Machine } from '#domain/core/model.ts';
import { ageMs } from '#domain/core/time.ts';

/** The overrides that count: a `replace` override, if any, is the whole aggregate; otherwise all merges. */
export function effectiveOverrides(overrides: HealthOverride[]): HealthOverride[] {
  const replacing = overrides.filter((o) => o.mode === 'replace');
  return replacing.length > 0 ? replacing.slice(-1) : overrides;
}

export function aggregateClassifications(overrides: HealthOverride[]): Set<Classification> {
  const result = new Set<Classification>();
  for (const override of effectiveOverrides(overrides)) {
    for (const alert of override.alerts) for (const c of alert.classifications) result.add(c);
  }
  return result;
}

/** Sources whose alerts keep the machine out of allocation, in the aggregate's terms. */
export function preventingSources(overrides: HealthOverride[]): string[] {
  return effectiveOverrides(overrides)
    .filter((o) => o.alerts.some((a) => a.classifications.includes('PreventAllocations')))
    .map((o) => o.source);
}

export interface HeartbeatView {
  /** When the site agent's latest roster was stored; machines in it count as seen then. */
  rosterSeenAt?: string;
  timeoutMs: number;
}

/** The last time the site agent is known to have seen this machine. */
export function lastSeenAt(machine: Machine, heartbeat: HeartbeatView): string | undefined {
  if (machine.heartbeatLive && heartbeat.rosterSeenAt !== undefined) {
    // The later of the two ISO timestamps (they compare as strings); decided for every candidate, so no array sort.
    const own = machine.lastHeartbeatAt ?? '';
    // biome-ignore lint/complexity/useMathMinMax: strings; Math.max would make NaN of them
    return own > heartbeat.rosterSeenAt ? own : heartbeat.rosterSeenAt;
  }
  return machine.lastHeartbeatAt;
}

/** No machine can be fresh: the agent's latest roster is older than the timeout (or there is none yet). */
export const rosterStale = (heartbeat: HeartbeatView, now: Date): boolean => ageMs(now, heartbeat.rosterSeenAt) > heartbeat.timeoutMs;

export function heartbeatStale(machine: Machine, heartbeat: HeartbeatView, now: Date): boolean {
  return ageMs(now, lastSeenAt(machine, heartbeat)) > heartbeat.timeoutMs;
}

/**
 * Whether an instance may be placed on the machine and, if not, every reason why. Reasons that do not depend on
 * time are also what keeps the machine in or out of the allocatable index (see `inAllocatableIndex`).
 */
export function allocatability(machine: Machine, heartbeat: HeartbeatView, now: Date) {
  const reasons = standingReasons(machine);
  if (heartbeatStale(machine, heartbeat, now)) reasons.push('heartbeat-stale');
  return { allocatable: reasons.length === 0, notAllocatableReasons: reasons };
}

function standingReasons(machine: Machine): string[] {
  const reasons: string[] = [];
  if (machine.retired) reasons.push('retired');
  if (machine.state !== 'Ready') reasons.push(`state:${machine.state}`);
  if (machine.instanceId !== undefined) reasons.push('assigned');
  if (machine.cleanup?.phase === 'failed') reasons.push('cleanup-failed');
  for (const source of preventingSources(machine.healthOverrides)) reasons.push(`health-override:${source}`);
  return reasons;
}

/** Heartbeat freshness changes with time alone, so the index holds the rest and readers check freshness. */
export const inAllocatableIndex = (machine: Machine): boolean => standingReasons(machine).length === 0;
