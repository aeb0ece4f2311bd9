import { describe, expect, it } from 'vitest';
import {
  boundBucketAlerts,
  keptAlerts,
  MAX_ALERT_MESSAGE,
  MAX_ALERTS_PER_MACHINE,
  MAX_BUCKET_ALERT_BYTES,
  type AgentAlert,
} from '#domain/repair/agent-alerts.ts';
import { MAX_TRANSACTION_ITEMS, type Change } from '#domain/core/change.ts';
import {
  bucketOf,
  bucketWithRoster,
  planHeartbeat,
  rosterDigest,
  walkBucket,
  WALK_ITEMS_PER_FAULT,
  WALK_RESERVED_ITEMS,
  type RosterBucket,
  type WalkPolicy,
} from '#domain/machines/heartbeat.ts';
import { allocatability } from '#domain/core/health.ts';
import type { Machine } from '#domain/core/model.ts';
import { repairClaimBlockers } from '#domain/repair/repair.ts';
import { initialSafety, type SafetyState } from '#domain/repair/safety.ts';
import { addMs, iso } from '#domain/core/time.ts';
import { aMachine, SAFETY_RULES, T0 } from '#test/support/fixtures.ts';

const TIMEOUT_MS = 30_000;
const now = addMs(T0, 90_000);
const at = iso(now);

const gpu = (message = 'GPU 3 fell off the bus'): AgentAlert => ({ id: 'GpuXid79', message, classifications: ['PreventAllocations'] });
const noisy: AgentAlert = { id: 'FanSpeed', message: 'fan 2 slow', classifications: ['SuppressExternalAlerting'] };

const machine = (over: Partial<Machine> = {}): Machine => aMachine({ version: 2, lastHeartbeatAt: iso(T0), ...over });
const policy = (over: Partial<WalkPolicy> = {}): WalkPolicy => ({ autoRepair: true, safety: null, fleetSize: 1000, now, rules: SAFETY_RULES, ...over });
const bucketWith = (ids: string[], alerts: Record<string, AgentAlert[]> = {}): RosterBucket =>
  bucketWithRoster(null, '00', ids, iso(T0), now, boundBucketAlerts(Object.entries(alerts)));
const walk = (bucket: RosterBucket, machines: Machine[], p: WalkPolicy = policy()) => walkBucket(bucket, machines, now, TIMEOUT_MS, p)!;
const sources = (m: Machine) => m.healthOverrides.map((o) => o.source).sort();
const events = (change: Change) => change.history.flatMap((h) => (h.event ? [h.event.type] : []));
const items = (change: Change) => (change.machines?.length ?? 0) + change.history.length + (change.rosterBuckets?.length ?? 0) + (change.safety ? 1 : 0);

describe('roster digest and plan with alerts', () => {
  it('covers the alerts: the same ids with other alerts differ, no alerts is the ids alone', () => {
    const ids = ['m-1', 'm-2'];
    expect(rosterDigest(ids, {})).toBe(rosterDigest(ids));
    const one = rosterDigest(ids, { 'm-1': [gpu()] });
    expect(one).not.toBe(rosterDigest(ids));
    expect(rosterDigest(ids, { 'm-1': [gpu('another message')] })).not.toBe(one);
    expect(rosterDigest(ids, { 'm-2': [gpu()] })).not.toBe(one);
    expect(rosterDigest(ids, { 'm-1': [gpu()] })).toBe(one);
  });

  it('an alert marks only its bucket changed; one that does not prevent allocation changes nothing', () => {
    const roster = Array.from({ length: 200 }, (_, i) => `m-${i}`);
    const first = planHeartbeat(null, null, roster, T0, TIMEOUT_MS);
    const digests = { buckets: Object.fromEntries([...first.changedBuckets].map(([b, ids]) => [b, rosterDigest(ids)])), version: 1 };
    const stored = { rosterSeenAt: iso(T0), machineCount: roster.length, version: 1 };

    const alerting = planHeartbeat(stored, digests, roster, T0, TIMEOUT_MS, new Map([['m-7', [gpu(), noisy]]]));
    expect([...alerting.changedBuckets.keys()]).toEqual([bucketOf('m-7')]);
    expect(alerting.alerts.get(bucketOf('m-7'))).toEqual({ 'm-7': [gpu()] });

    const quiet = planHeartbeat(stored, digests, roster, T0, TIMEOUT_MS, new Map([['m-7', [noisy]]]));
    expect(quiet.changedBuckets.size).toBe(0);
    // Alerts for a machine the roster does not list are not the roster's.
    expect(planHeartbeat(stored, digests, roster, T0, TIMEOUT_MS, new Map([['elsewhere', [gpu()]]])).changedBuckets.size).toBe(0);
  });

  it('the bucket keeps the alerts, and drops them when the agent no longer reports any', () => {
    const alerting = bucketWithRoster(null, '00', ['m-1'], undefined, T0, { 'm-1': [gpu()] });
    expect(alerting.alerts).toEqual({ 'm-1': [gpu()] });
    expect(alerting.digest).toBe(rosterDigest(['m-1'], { 'm-1': [gpu()] }));
    const cleared = bucketWithRoster(alerting, '00', ['m-1'], iso(T0), now);
    expect(cleared).not.toHaveProperty('alerts');
    expect(cleared.digest).toBe(rosterDigest(['m-1']));
  });
});

describe('alert bounds', () => {
  it('keeps at most 8 alerts a machine, messages cut to 1024 characters', () => {
    const many = Array.from({ length: 12 }, (_, i) => ({ ...gpu('x'.repeat(5000)), id: `a${i}` }));
    const kept = keptAlerts(many);
    expect(kept).toHaveLength(MAX_ALERTS_PER_MACHINE);
    expect(kept.map((a) => a.message.length)).toEqual(new Array(MAX_ALERTS_PER_MACHINE).fill(MAX_ALERT_MESSAGE));
  });

  it('a bucket past its byte budget shortens messages, then keeps one alert a machine: every machine stays alerting', () => {
    const long = Array.from({ length: 8 }, (_, i) => ({ ...gpu('y'.repeat(1024)), id: `a${i}` }));
    const some = boundBucketAlerts(Array.from({ length: 10 }, (_, i) => [`m-${i}`, long] as const));
    expect(Buffer.byteLength(JSON.stringify(some))).toBeLessThanOrEqual(MAX_BUCKET_ALERT_BYTES);
    expect(Object.values(some).every((alerts) => alerts.length === 8 && alerts[0]!.message.length < 1024)).toBe(true);

    const crowd = boundBucketAlerts(Array.from({ length: 300 }, (_, i) => [`m-${i}`, long] as const));
    expect(Object.keys(crowd)).toHaveLength(300);
    expect(Object.values(crowd).every((alerts) => alerts.length === 1 && alerts[0]!.message === '')).toBe(true);
  });
});

describe('walkBucket: the hardware-health override', () => {
  it('adds it (merge, source hardware-health, the alerts with the machine as target), and the machine is not allocatable', () => {
    const change = walk(bucketWith(['m-1'], { 'm-1': [gpu(), noisy] }), [machine()], policy({ autoRepair: false })).change;
    const after = change.machines![0]!.after;
    expect(after.healthOverrides).toEqual([
      { source: 'hardware-health', mode: 'merge', alerts: [{ ...gpu(), target: 'm-1' }], createdBy: 'site-agent', createdAt: at },
    ]);
    expect(allocatability(after, { timeoutMs: TIMEOUT_MS }, now).notAllocatableReasons).toContain('health-override:hardware-health');
    expect(change.history.map((h) => h.action)).toEqual(['health-override-added', 'event-emitted']);
    expect(events(change)).toEqual(['MachineQuarantined']);
    expect(change.history[1]!.event!.detail).toMatchObject({
      issue: { category: 'HARDWARE', summary: 'Site agent health alert GpuXid79: GPU 3 fell off the bus' },
    });
    expect(change.safety).toBeUndefined();
    expect(after.repairLog!.reports).toEqual([{ at, issue: expect.objectContaining({ category: 'HARDWARE' }) }]);
  });

  it('updates it when the alerts change, keeping when the fault began and asking for nothing again', () => {
    const [first] = walk(bucketWith(['m-1'], { 'm-1': [gpu()] }), [machine()]).change.machines!;
    const changed = walk(bucketWith(['m-1'], { 'm-1': [gpu('worse now')] }), [first!.after]).change;
    const override = changed.machines![0]!.after.healthOverrides.find((o) => o.source === 'hardware-health')!;
    expect(override.alerts.map((a) => a.message)).toEqual(['worse now']);
    expect(override.createdAt).toBe(at);
    expect(changed.history.map((h) => h.action)).toEqual(['health-override-added']);
    expect(changed.safety).toBeUndefined();
  });

  it('while the same alerts stay, a walk changes nothing: no repair is requested again', () => {
    const [first] = walk(bucketWith(['m-1'], { 'm-1': [gpu()] }), [machine()]).change.machines!;
    const withoutRepair = { ...first!.after, healthOverrides: first!.after.healthOverrides.filter((o) => o.source === 'hardware-health') };
    const again = walk(bucketWith(['m-1'], { 'm-1': [gpu()] }), [withoutRepair]).change;
    expect(again.machines).toEqual([]);
    expect(again.history).toEqual([]);
    expect(again.safety).toBeUndefined();
  });

  it('removes it when the agent lists the machine without alerts; the repair request stays', () => {
    const [first] = walk(bucketWith(['m-1'], { 'm-1': [gpu()] }), [machine()]).change.machines!;
    expect(sources(first!.after)).toEqual(['hardware-health', 'repair-request']);
    const cleared = walk(bucketWith(['m-1']), [first!.after]).change;
    expect(sources(cleared.machines![0]!.after)).toEqual(['repair-request']);
    expect(cleared.history.map((h) => [h.action, h.changes])).toEqual([['health-override-removed', { healthOverride: { from: 'hardware-health' } }]]);
  });

  it('a machine that left the roster keeps it: the agent said nothing about it being well', () => {
    const [first] = walk(bucketWith(['m-1'], { 'm-1': [gpu()] }), [machine()]).change.machines!;
    const left = { ...bucketWith([]), leftIds: ['m-1'] };
    const step = walk(left, [first!.after]);
    // Its liveness alone changes: a change of its own, with no history.
    expect(step.change.machines).toEqual([]);
    const after = step.separate[0]!.machines![0]!.after;
    expect(after.heartbeatLive).toBe(false);
    expect(sources(after)).toContain('hardware-health');
  });
});

describe('walkBucket: the repair policy of a new fault', () => {
  it('auto-repair on: a repair request and the quarantine counted on the safety record, in the same change', () => {
    const stored: SafetyState = { ...initialSafety(), version: 4 };
    const change = walk(bucketWith(['m-1'], { 'm-1': [gpu()] }), [machine()], policy({ safety: stored })).change;
    expect(sources(change.machines![0]!.after)).toEqual(['hardware-health', 'repair-request']);
    expect(events(change)).toEqual(['MachineQuarantined', 'RepairRequested']);
    expect(change.safety).toEqual({ before: stored, after: { ...stored, quarantines: [at] } });
    expect(repairClaimBlockers({ ...change.machines![0]!.after, heartbeatLive: true }, { rosterSeenAt: at, timeoutMs: TIMEOUT_MS }, now)).toEqual([]);
  });

  it('the breaker tripped: quarantined only, and the machine listed as held back', () => {
    const tripped: SafetyState = { repairStorm: { state: 'tripped', trippedAt: iso(T0), heldBack: ['m-9'] }, quarantines: [], version: 1 };
    const change = walk(bucketWith(['m-1'], { 'm-1': [gpu()] }), [machine()], policy({ safety: tripped })).change;
    expect(sources(change.machines![0]!.after)).toEqual(['hardware-health']);
    expect(change.safety!.after.repairStorm.heldBack).toEqual(['m-9', 'm-1']);
    expect(change.history.find((h) => h.event)!.event!.detail).toMatchObject({ repairRequestHeldBack: true });
  });

  it('many faults at once trip the breaker part-way through one chunk, counted in order on one record', () => {
    const ids = Array.from({ length: 4 }, (_, i) => `m-${i}`);
    const change = walk(
      bucketWith(ids, Object.fromEntries(ids.map((id) => [id, [gpu()]]))),
      ids.map((id) => machine({ id })),
      policy({ rules: { ...SAFETY_RULES, maxQuarantines: 2 } }),
    ).change;
    expect(change.machines!.map((m) => sources(m.after).includes('repair-request'))).toEqual([true, true, false, false]);
    expect(events(change)).toContain('RepairStormDetected');
    expect(change.safety!.after).toMatchObject({ quarantines: [at, at, at, at], repairStorm: { state: 'tripped', heldBack: ['m-2', 'm-3'] } });
  });

  it('repaired twice inside the window: escalated out for repair, not automated again', () => {
    const repairLog = { reports: [{ at: iso(T0) }], completed: [iso(T0), iso(T0)] };
    const change = walk(bucketWith(['m-1'], { 'm-1': [gpu()] }), [machine({ repairLog })]).change;
    expect(sources(change.machines![0]!.after)).toEqual(['hardware-health', 'out-for-repair']);
    expect(events(change)).toEqual(['MachineQuarantined', 'RepairEscalated']);
    expect(change.safety).toBeUndefined();
  });

  it('a fault that cleared and comes back is a new one: it counts as another report', () => {
    const [first] = walk(bucketWith(['m-1'], { 'm-1': [gpu()] }), [machine()]).change.machines!;
    const [cleared] = walk(bucketWith(['m-1']), [first!.after]).change.machines!;
    const back = walk(bucketWith(['m-1'], { 'm-1': [gpu()] }), [cleared!.after]).change;
    expect(back.machines![0]!.after.repairLog!.reports).toHaveLength(2);
    // A repair request is still pending from the first fault: not requested twice.
    expect(events(back)).toEqual(['MachineQuarantined']);
    expect(back.safety).toBeUndefined();
  });
});

describe('walkBucket: chunks that fit one transaction', () => {
  it('new faults make a smaller chunk, within the transaction limit, and the walk goes on where it stopped', () => {
    const ids = Array.from({ length: 50 }, (_, i) => `m-${String(i).padStart(2, '0')}`);
    const bucket = bucketWith(ids, Object.fromEntries(ids.map((id) => [id, [gpu()]])));
    let machines = ids.map((id) => machine({ id, heartbeatLive: false }));
    let safety: SafetyState | null = null;
    const chunks: number[] = [];
    // A breaker that never trips: every fault is the costliest kind (a repair request and two events).
    const rules = { ...SAFETY_RULES, maxQuarantines: 1000, maxFraction: 1 };
    for (;;) {
      const step = walk(bucket, machines, policy({ safety, rules }));
      expect(items(step.change)).toBeLessThanOrEqual(MAX_TRANSACTION_ITEMS);
      chunks.push(step.change.machines!.length);
      const done = new Map(step.change.machines!.map((m) => [m.after.id, m.after]));
      machines = machines.map((m) => done.get(m.id) ?? m);
      safety = step.change.safety?.after ?? safety;
      if (step.settles) break;
    }
    expect(chunks[0]).toBe(Math.floor((MAX_TRANSACTION_ITEMS - WALK_RESERVED_ITEMS) / WALK_ITEMS_PER_FAULT));
    expect(chunks.reduce((a, b) => a + b)).toBe(50);
    expect(machines.every((m) => sources(m).includes('hardware-health') && m.heartbeatLive)).toBe(true);
  });
});
