// What the dashboard derives from the API's machines: pure functions, no DOM.

/** @import { Answer, Item } from '../client/api.ts' */
/** @typedef {Answer<'/admin/machines/{id}', 'get'>} Machine */
/** @typedef {Machine['healthOverrides'][number]} HealthOverride */
/** @typedef {Item<'/admin/machines/{id}/history'>} HistoryEntry */
/** @typedef {Item<'/admin/meta-instances'>} MetaInstance */

export const SOURCES = {
  reported: 'tenant-reported-issue',
  repairRequest: 'repair-request',
  outForRepair: 'out-for-repair',
  /** The site agent's health alerts: it stays while the agent reports them. */
  hardwareHealth: 'hardware-health',
};

/** Repair outcomes as the machine history records them (the repair events' outbox entries). */
export const OUTCOME_EVENTS = ['RepairCompleted', 'RepairFailed', 'RepairEscalated'];

/** How far back "recently" completed or failed repairs go. */
export const RECENT_MS = 24 * 60 * 60 * 1000;

/** @param {Pick<Machine, 'healthOverrides'>} machine @param {string} source @returns {HealthOverride | undefined} */
export const override = (machine, source) => machine.healthOverrides.find((o) => o.source === source);
/** @param {Pick<Machine, 'healthOverrides'>} machine @param {string} source */
const has = (machine, source) => override(machine, source) !== undefined;

/** The overrides whose machines the repair pipeline shows: what the dashboard lists instead of the whole fleet. */
export const PIPELINE_SOURCES = [SOURCES.reported, SOURCES.repairRequest, SOURCES.outForRepair];

/**
 * The fleet panel's counts from the summary: every state shown (zero included), types by name.
 * @param {Answer<'/admin/fleet/summary', 'get'>} summary
 */
export function fleetCounts(summary) {
  const byState = { Ready: 0, Assigned: 0, Cleanup: 0, ...summary.byState };
  /** @type {Record<string, { total: number, allocatable: number }>} */
  const byType = Object.fromEntries(Object.entries(summary.byType).map(([type, t]) => [type, { total: t.machines, allocatable: t.allocatable }]));
  return { total: summary.machines, allocatable: summary.allocatable, stale: summary.stale, byState, byOverride: summary.byOverride, byType };
}

/** The issue a machine is quarantined for: the tenant's report, else the repair request's. */
export const issueOf = (/** @type {Machine} */ machine) => override(machine, SOURCES.reported)?.issue ?? override(machine, SOURCES.repairRequest)?.issue;

/**
 * Where each machine is in the repair pipeline (API.md's overrides):
 * quarantined: a tenant's report without a repair request (auto-repair off, a failed repair, or held back);
 * waiting: a repair request no repair tenant has claimed (nor can: out for repair); inRepair: a repair request and an instance (the claim);
 * outForRepair: taken out by a provider or escalated after repeated repairs.
 */
export function pipeline(/** @type {Machine[]} */ machines) {
  const byAge = (/** @type {string} */ source) => (/** @type {Machine} */ a, /** @type {Machine} */ b) =>
    (override(a, source)?.createdAt ?? '').localeCompare(override(b, source)?.createdAt ?? '');
  const quarantined = machines.filter((m) => has(m, SOURCES.reported) && !has(m, SOURCES.repairRequest) && !has(m, SOURCES.outForRepair));
  // Out for repair keeps repair tenants away too: such a machine is listed there, not as waiting.
  const waiting = machines.filter((m) => has(m, SOURCES.repairRequest) && !m.instanceId && !has(m, SOURCES.outForRepair));
  const inRepair = machines.filter((m) => has(m, SOURCES.repairRequest) && m.instanceId);
  const outForRepair = machines.filter((m) => has(m, SOURCES.outForRepair));
  return {
    quarantined: quarantined.sort(byAge(SOURCES.reported)),
    waiting: waiting.sort(byAge(SOURCES.repairRequest)),
    inRepair: inRepair.sort(byAge(SOURCES.repairRequest)),
    outForRepair: outForRepair.sort(byAge(SOURCES.outForRepair)),
  };
}

/**
 * Machines whose history may hold a recent repair outcome: repair tenants leave `repair_status` on the machine,
 * a failed repair leaves it quarantined, an escalation takes it out for repair.
 */
export const outcomeCandidates = (/** @type {Machine[]} */ machines) =>
  machines.filter((m) => m.labels?.repair_status !== undefined || (has(m, SOURCES.reported) && !has(m, SOURCES.repairRequest)) || has(m, SOURCES.outForRepair));

/** The newest repair outcome in a machine's history (newest first), or null. @param {HistoryEntry[]} history */
export function latestOutcome(history) {
  const entry = history.find((h) => h.action === 'event-emitted' && OUTCOME_EVENTS.includes(h.message ?? ''));
  if (!entry) return null;
  const before = history.slice(history.indexOf(entry));
  const released = before.find((h) => h.action === 'instance-released-by-repair-tenant');
  // What was repaired: the tenant's report that started it.
  const reported = before.find((h) => h.action === 'instance-released' && h.issue);
  // An event's detail is free-form in the API; the repair events carry these.
  const detail = /** @type {{ labels?: Record<string, string>, issue?: HistoryEntry['issue'] }} */ (entry.event?.detail ?? {});
  return {
    machineId: entry.machineId,
    outcome: (entry.message ?? '').replace(/^Repair/, ''),
    at: entry.at,
    repairStatus: detail.labels?.repair_status ?? released?.message?.replace(/^repair_status: /, ''),
    issue: reported?.issue ?? detail.issue,
  };
}

/** "45 s", "12 min", "3 h 5 min", "2 d 4 h". @param {number} ms */
export function duration(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s} s`;
  const min = Math.floor(s / 60);
  if (min < 60) return `${min} min`;
  const hours = Math.floor(min / 60);
  if (hours < 24) return `${hours} h ${min % 60} min`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

/** @param {string | undefined} iso @param {number} now */
export const since = (iso, now) => (iso ? duration(now - Date.parse(iso)) : '');

/**
 * A meta-instance's status as people read it. Failures up to the limit are retried at once (still Placing);
 * past it the reconciler backs off (Retrying).
 */
export function metaStatus(/** @type {MetaInstance} */ meta, /** @type {number | undefined} */ maxFailures) {
  const n = meta.consecutiveFailures ?? 0;
  const max = maxFailures ?? '?';
  if (meta.status === 'Retrying') return `Retrying · ${n} consecutive failures (limit ${max}), backing off`;
  if (n > 0) return `${meta.status} · ${n} of ${max} failures`;
  return meta.status;
}
