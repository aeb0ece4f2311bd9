import { createHash } from 'node:crypto';
import type { HistoryEntry, Machine } from './model.ts';
import { ageMs, iso } from './time.ts';

/**
 * Heartbeats without a write per machine per beat. The site agent sends its whole roster each beat. We keep one
 * small site record (when the roster was last seen and a digest of it); a machine in that roster is live and
 * counts as seen at the record's time. Only a change in the roster (a machine stops or resumes, or a new machine
 * is registered) touches machine records, and only those whose liveness changed. An idle fleet of any size thus
 * costs one small write per `timeout / REFRESH_DIVISOR`.
 */
export interface SiteHeartbeat {
  rosterSeenAt: string;
  digest: string;
  machineCount: number;
  /** While one beat walks the machines for a changed roster, others only refresh the roster time. */
  reconcilingUntil?: string;
  version: number;
}

/** The digest a registration leaves: no roster matches it, so the next beat walks the machines. */
export const ROSTER_RESET = 'reset';

/** Refresh the stored roster time this many times per timeout, so a live machine never looks stale. */
export const REFRESH_DIVISOR = 3;

export function rosterDigest(machineIds: string[]): string {
  const hash = createHash('sha256');
  for (const id of [...new Set(machineIds)].sort()) hash.update(id).update('\n');
  return hash.digest('base64url');
}

export type HeartbeatPlan =
  | { kind: 'nothing' }
  | { kind: 'refresh' }
  /** The roster differs from the stored one: bring every machine's liveness in line, then store the roster. */
  | { kind: 'reconcile-roster' };

export function planHeartbeat(stored: SiteHeartbeat | null, digest: string, now: Date, timeoutMs: number): HeartbeatPlan {
  const reconciling = stored?.reconcilingUntil !== undefined && ageMs(now, stored.reconcilingUntil) < 0;
  if ((!stored || stored.digest !== digest) && !reconciling) return { kind: 'reconcile-roster' };
  if (ageMs(now, stored!.rosterSeenAt) >= timeoutMs / REFRESH_DIVISOR) return { kind: 'refresh' };
  return { kind: 'nothing' };
}

/**
 * A machine's liveness after a roster change, or null when it is unchanged. A machine leaving the roster keeps as
 * its last heartbeat the time of the previous roster, the last time it was actually seen.
 */
export function livenessChange(
  machine: Machine,
  inRoster: boolean,
  previousRosterSeenAt: string | undefined,
  now: Date,
  timeoutMs?: number,
): { next: Machine; history: HistoryEntry } | null {
  if (machine.heartbeatLive === inRoster) return null;
  const lastHeartbeatAt = inRoster ? iso(now) : (previousRosterSeenAt ?? machine.lastHeartbeatAt);
  // When it will count as stale: the sweep looks at it then, so a member on it is replaced without any new write.
  const staleAt = !inRoster && timeoutMs !== undefined ? new Date(Date.parse(lastHeartbeatAt ?? iso(now)) + timeoutMs + 1) : undefined;
  const next: Machine = { ...machine, heartbeatLive: inRoster, lastHeartbeatAt, heartbeatStaleAt: staleAt ? iso(staleAt) : undefined, updatedAt: iso(now) };
  return {
    next,
    history: {
      machineId: machine.id,
      at: iso(now),
      actor: 'site-agent',
      action: inRoster ? 'heartbeat-resumed' : 'heartbeat-stopped',
      changes: { heartbeatLive: { from: machine.heartbeatLive, to: inRoster } },
      ...(inRoster ? {} : { message: `last seen ${lastHeartbeatAt ?? 'never'}` }),
    },
  };
}
