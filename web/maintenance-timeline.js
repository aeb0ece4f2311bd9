// What the dashboard derives from an open maintenance to draw it as a timeline: its hand-back deadlines, its waves
// (machines admitted together), its overdue machines, each placed on one time axis. Pure functions, no DOM.

/** @import { Item } from '../client/api.ts' */
/** @typedef {Item<'/admin/maintenance'>} Maintenance */
/** @typedef {Maintenance['machines'][string]} Course */

export const OPEN_STATES = /** @type {const} */ (['Declared', 'InProgress', 'Halted']);
/** Waves drawn per maintenance, the latest: one of a thousand machines admitted one at a time stays readable. */
export const WAVES_SHOWN = 40;
const PHASES = /** @type {const} */ (['held', 'waiting', 'in-maintenance', 'validating', 'returned', 'failed']);

/**
 * @typedef {object} Deadline
 * @property {string} at
 * @property {number} left where on the axis, in % of its width
 * @property {string[]} orgs the orgs whose machines must be handed back by then
 * @property {number} held machines still held with this deadline
 */

/**
 * @typedef {object} Wave
 * @property {number} number counting from 1, in order of admission
 * @property {string} startedAt
 * @property {string} [endedAt] when its last machine came back; absent while one is in flight
 * @property {number} machines
 * @property {number} returned
 * @property {number} failed
 * @property {number} left
 * @property {number} width
 */

/** @typedef {{ machineId: string, phase: string, dueAt: string }} Overdue */

/**
 * @typedef {object} Timeline
 * @property {string} id
 * @property {string} title
 * @property {string} state
 * @property {string} reason
 * @property {Record<string, number>} phases machines per phase
 * @property {string} inFlight "2 of 4 in flight"
 * @property {{ from: string, to: string }} span the axis: declaration to the latest deadline, return or now
 * @property {number} now where now is on the axis
 * @property {Deadline[]} deadlines
 * @property {Wave[]} waves the latest WAVES_SHOWN
 * @property {number} earlierWaves waves before those shown
 * @property {Overdue[]} overdue
 */

const ms = (/** @type {string} */ iso) => Date.parse(iso);
const ended = (/** @type {Course} */ c) => c.phase === 'returned' || c.phase === 'failed';

/** @param {Maintenance} m @param {number} now */
export function timelineOf(m, now) {
  const courses = Object.entries(m.machines).map(([machineId, course]) => ({ machineId, ...course }));
  const times = [ms(m.createdAt), now, ms(m.handBackBy), ...courses.flatMap((c) => [ms(c.handBackBy), ...(c.returnedAt ? [ms(c.returnedAt)] : [])])];
  const from = Math.min(...times);
  const to = Math.max(...times);
  // A twentieth of the axis beyond its last time, so that the last marker is not on the edge.
  const end = to + Math.max(60_000, (to - from) / 20);
  const at = (/** @type {number} */ t) => Math.round(((t - from) / (end - from)) * 1000) / 10;

  /** @type {Map<string, { orgs: Set<string>, held: number }>} */
  const byDeadline = new Map([[m.handBackBy, { orgs: new Set(), held: 0 }]]);
  for (const c of courses) {
    const entry = byDeadline.get(c.handBackBy) ?? { orgs: new Set(), held: 0 };
    if (c.org) entry.orgs.add(c.org);
    if (c.phase === 'held') entry.held += 1;
    byDeadline.set(c.handBackBy, entry);
  }
  const deadlines = [...byDeadline]
    .sort(([a], [b]) => ms(a) - ms(b))
    .map(([deadline, { orgs, held }]) => ({ at: deadline, left: at(ms(deadline)), orgs: [...orgs].sort(), held }));

  /** @type {Map<string, typeof courses>} */
  const byStart = new Map();
  for (const c of courses) if (c.startedAt) byStart.set(c.startedAt, [...(byStart.get(c.startedAt) ?? []), c]);
  const waves = [...byStart]
    .sort(([a], [b]) => ms(a) - ms(b))
    .map(([startedAt, machines], i) => {
      const done = machines.every(ended);
      const endedAt = done
        ? machines
            .map((c) => c.returnedAt ?? startedAt)
            .sort()
            .at(-1)
        : undefined;
      const left = at(ms(startedAt));
      return {
        number: i + 1,
        startedAt,
        ...(endedAt ? { endedAt } : {}),
        machines: machines.length,
        returned: machines.filter((c) => c.phase === 'returned').length,
        failed: machines.filter((c) => c.phase === 'failed').length,
        left,
        width: Math.max(0.5, at(endedAt ? ms(endedAt) : now) - left),
      };
    });

  const phases = Object.fromEntries(PHASES.map((p) => [p, courses.filter((c) => c.phase === p).length]));
  const overdue = courses
    .filter((c) => c.overdue && !ended(c))
    .map((c) => ({ machineId: c.machineId, phase: c.phase, dueAt: new Date(ms(c.handedBackAt ?? m.createdAt) + m.windowMinutes * 60_000).toISOString() }));
  return {
    id: m.id,
    title: `${m.kind} ${m.category} maintenance on ${courses.length} machine${courses.length === 1 ? '' : 's'}`,
    state: m.state,
    reason: m.reason,
    phases,
    inFlight: `${(phases['in-maintenance'] ?? 0) + (phases.validating ?? 0)} of at most ${m.rollout.maxInFlight} in flight`,
    span: { from: new Date(from).toISOString(), to: new Date(end).toISOString() },
    now: at(now),
    deadlines,
    waves: waves.slice(-WAVES_SHOWN),
    earlierWaves: Math.max(0, waves.length - WAVES_SHOWN),
    overdue,
  };
}
