import type { Classification, HealthOverride, Issue, Machine } from '#domain/core/model.ts';
import { SOURCES } from '#domain/core/overrides.ts';

// The site agent's health alerts about a machine (its health probes), as a heartbeat carries them and as the roster
// bucket keeps them. Only alerts that prevent allocation become a `hardware-health` override; the others are the
// agent's business (it may alert on them elsewhere) and are dropped at the door.

export interface AgentAlert {
  id: string;
  message: string;
  classifications: Classification[];
}

/** A bucket's alerting machines: machine id → the alerts the agent reports for it (never an empty list). */
export type BucketAlerts = Record<string, AgentAlert[]>;

/** At most this many alerts per machine are kept (the first ones the agent lists). */
export const MAX_ALERTS_PER_MACHINE = 8;
/** A kept alert's message is cut to this many characters. */
export const MAX_ALERT_MESSAGE = 1024;
/**
 * The serialized alerts one roster bucket holds at most, so a bucket stays a small item and a beat that rewrites
 * all 64 buckets stays inside one transaction's 4 MB: past it, messages are shortened for the whole bucket, then
 * each machine keeps only its first alert (still quarantined, with less said about why).
 */
export const MAX_BUCKET_ALERT_BYTES = 24 * 1024;
const MESSAGE_STEPS = [MAX_ALERT_MESSAGE, 256, 64, 0];

const preventsAllocation = (alert: AgentAlert) => alert.classifications.includes('PreventAllocations');

/** What is kept of one machine's alerts: the ones that prevent allocation, bounded. Empty: nothing to act on. */
export function keptAlerts(alerts: readonly AgentAlert[] | undefined, messageLimit = MAX_ALERT_MESSAGE): AgentAlert[] {
  return (alerts ?? [])
    .filter(preventsAllocation)
    .slice(0, MAX_ALERTS_PER_MACHINE)
    .map((a) => ({ id: a.id, message: a.message.slice(0, messageLimit), classifications: [...new Set(a.classifications)] }));
}

const sizeOf = (alerts: BucketAlerts) => Buffer.byteLength(JSON.stringify(alerts));

/**
 * One bucket's alerts as it stores them, inside MAX_BUCKET_ALERT_BYTES when that can be done by shortening, keyed in
 * id order so the same report always gives the same record (and digest).
 */
export function boundBucketAlerts(reported: Iterable<[string, readonly AgentAlert[] | undefined]>): BucketAlerts {
  const sorted = [...reported].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const at = (messageLimit: number, perMachine = MAX_ALERTS_PER_MACHINE) => {
    const kept: BucketAlerts = {};
    for (const [id, alerts] of sorted) {
      const bounded = keptAlerts(alerts, messageLimit).slice(0, perMachine);
      if (bounded.length > 0) kept[id] = bounded;
    }
    return kept;
  };
  for (const limit of MESSAGE_STEPS) {
    const kept = at(limit);
    if (sizeOf(kept) <= MAX_BUCKET_ALERT_BYTES) return kept;
  }
  return at(0, 1);
}

/** Whether two reports say the same (order included: the agent's order is kept). */
export const sameAlerts = (a: readonly AgentAlert[], b: readonly AgentAlert[]): boolean => JSON.stringify(a) === JSON.stringify(b);

/** The override the agent's alerts put on a machine; `createdAt` stays that of the fault's first report. */
export function hardwareHealthOverride(machineId: string, alerts: readonly AgentAlert[], createdAt: string): HealthOverride {
  return {
    source: SOURCES.hardwareHealth,
    mode: 'merge',
    alerts: alerts.map((a) => ({ id: a.id, target: machineId, message: a.message, classifications: a.classifications })),
    createdBy: 'site-agent',
    createdAt,
  };
}

/** The agent's alerts told as a hardware issue: what a repair request, an event and the repair log carry. */
export function alertsIssue(alerts: readonly Pick<AgentAlert, 'id' | 'message'>[]): Issue {
  const [first, ...more] = alerts;
  const line = (a: Pick<AgentAlert, 'id' | 'message'>) => (a.message ? `${a.id}: ${a.message}` : a.id);
  return {
    category: 'HARDWARE',
    summary: `Site agent health alert ${first ? line(first) : ''}`.trim().slice(0, 1024),
    ...(more.length > 0 ? { details: more.map(line).join('\n').slice(0, 8192) } : {}),
  };
}

/** The issue of a machine's hardware-health override, if it has one. */
export function hardwareHealthIssue(machine: Machine): Issue | undefined {
  const override = machine.healthOverrides.find((o) => o.source === SOURCES.hardwareHealth);
  return override ? alertsIssue(override.alerts) : undefined;
}
