import { describe, expect, it } from 'vitest';
import { cleanupTimings } from '#domain/instances/cleanup.ts';
import { noReplacements, type MetaSnapshot } from '#domain/meta-instances/meta-instances.ts';
import { buildOverride } from '#domain/core/overrides.ts';
import { addMs, iso } from '#domain/core/time.ts';
import { instanceReconciler, type InstanceSnapshot } from '#reconcilers/instance.ts';
import { machineReconciler, type MachineSnapshot } from '#reconcilers/machine.ts';
import { metaInstanceReconciler } from '#reconcilers/meta-instance.ts';
import { registry } from '#reconcilers/registry.ts';
import { waitQueueReconciler } from '#reconcilers/wait-queue.ts';
import { fleetSummaryReconciler } from '#reconcilers/fleet-summary.ts';
import type { Instance, Machine } from '#domain/core/model.ts';
import { AT, NOW, aMachine, aMetaInstance, anInstance } from '#test/support/fixtures.ts';

// Each reconciler's decide and settle are pure: snapshots in, decisions out, no store, no agent, no clock. Their
// watches and due rules are pure too; the registry combines them.

const LEASE_MS = 30_000;

describe('instance reconciler', () => {
  const snapshot = (overrides: Partial<InstanceSnapshot> = {}): InstanceSnapshot => ({
    instance: anInstance(),
    machine: null,
    now: NOW,
    createLeaseMs: LEASE_MS,
    ...overrides,
  });

  it('claims a pending create under a lease and names the create as the effect', () => {
    const decision = instanceReconciler.decide(snapshot());
    expect(decision.effect).toEqual({ call: 'create', request: { name: 'job', machineId: 'm-1', instanceId: 'i-1', clientToken: 'tok-1' } });
    expect(decision.change?.instances?.[0]?.after.creation).toEqual({ clientToken: 'tok-1', phase: 'in-flight', leaseUntil: iso(addMs(NOW, LEASE_MS)) });
    expect(decision.requeueAt).toBeUndefined();
  });

  it('decides nothing while another claim is live, and asks the agent where the create stands once it lapsed', () => {
    const inFlight = anInstance({ creation: { clientToken: 'tok-1', phase: 'in-flight', leaseUntil: iso(addMs(NOW, 1)) } });
    expect(instanceReconciler.decide(snapshot({ instance: inFlight }))).toEqual({});
    const lapsed = instanceReconciler.decide(snapshot({ instance: inFlight, now: addMs(NOW, 2) }));
    expect(lapsed.effect).toEqual({ call: 'status', instanceId: 'i-1', siteName: 'job' });
    expect(lapsed.change?.instances?.[0]?.after.creation).toMatchObject({ phase: 'in-flight', checks: 1 });
    expect(instanceReconciler.decide(snapshot({ instance: anInstance({ status: 'Ready', creation: { clientToken: 'tok-1', phase: 'done' } }) }))).toEqual({});
  });

  it('settles a successful create as Ready, and nothing when the machine is gone', () => {
    const inFlight = anInstance({ creation: { clientToken: 'tok-1', phase: 'in-flight', leaseUntil: iso(addMs(NOW, LEASE_MS)) } });
    const machine = aMachine({ state: 'Assigned', instanceId: 'i-1' });
    const created = { call: 'create' as const, outcome: { ok: true as const, siteName: 'job', attempts: 1 } };
    const settled = instanceReconciler.effects!.settle(snapshot({ instance: inFlight, machine }), {} as never, created);
    expect(settled?.instances?.[0]?.after).toMatchObject({ status: 'Ready', createAttempts: 1, creation: { phase: 'done' } });
    expect(instanceReconciler.effects!.settle(snapshot({ instance: inFlight }), {} as never, created)).toBeNull();
  });

  it("settles the agent's answer about a lost create: present → Ready, absent → sent again", () => {
    const inFlight = anInstance({ creation: { clientToken: 'tok-1', phase: 'in-flight', checks: 1, leaseUntil: iso(addMs(NOW, 30_000)) } });
    const machine = aMachine({ state: 'Assigned', instanceId: 'i-1' });
    const settle = (kind: 'present' | 'absent') =>
      instanceReconciler.effects!.settle(snapshot({ instance: inFlight, machine }), {} as never, { call: 'status', outcome: { kind } });
    expect(settle('present')?.instances?.[0]?.after).toMatchObject({ status: 'Ready', creation: { phase: 'done' } });
    expect(settle('absent')?.instances?.[0]?.after.creation).toEqual({ clientToken: 'tok-1', phase: 'pending' });
  });

  it('is concerned only by a create to claim, or a claim that fell due, with its machine read along', () => {
    const concerns = (before: Instance | null, after: Instance | null) => [...instanceReconciler.watches.instance!.concerns(before, after, 'i-1')];
    const pending = anInstance();
    const inFlight = anInstance({ creation: { clientToken: 't', phase: 'in-flight', leaseUntil: 'L' } });
    expect(concerns(null, pending)).toEqual([{ id: 'i-1', related: { machines: ['m-1'] } }]);
    expect(concerns(null, null)).toEqual(['i-1']);
    // A claim waits for its lease: only the sweep's delivery of it (same image both sides) concerns the reconciler.
    expect(concerns(pending, inFlight)).toEqual([]);
    expect(concerns(inFlight, inFlight)).toEqual([{ id: 'i-1', related: { machines: ['m-1'] } }]);
    expect(concerns(inFlight, { ...inFlight })).toEqual([]);
    // Nothing to do for an instance past provisioning.
    for (const status of ['Ready', 'Repairing', 'Terminating', 'Terminated', 'Failed'] as const) {
      const after = anInstance({ status, creation: { clientToken: 't', phase: 'done' } });
      expect(concerns(inFlight, after)).toEqual([]);
      expect(concerns(after, after)).toEqual([]);
    }
  });

  it('settles first on the snapshot its claim left, only with the machine read', () => {
    const pending = anInstance();
    const machine = aMachine({ state: 'Assigned', instanceId: 'i-1', version: 4 });
    const claim = instanceReconciler.decide(snapshot({ instance: pending, machine })).change!;
    const later = addMs(NOW, 50);
    const advanced = instanceReconciler.advance!(snapshot({ instance: pending, machine }), claim, later)!;
    expect(advanced.instance).toEqual({ ...claim.instances![0]!.after, version: pending.version + 1 });
    expect(advanced.machine).toBe(machine);
    expect(advanced.now).toBe(later);
    expect(instanceReconciler.advance!(snapshot({ instance: pending }), claim, later)).toBeNull();
  });

  it('is due when its create is pending, or when the claim on it lapses', () => {
    const due = instanceReconciler.watches.instance!.dueAt!;
    expect(due(anInstance({ updatedAt: AT }))).toBe(AT);
    expect(due(anInstance({ creation: { clientToken: 't', phase: 'in-flight', leaseUntil: 'L' } }))).toBe('L');
    expect(due(anInstance({ status: 'Ready', creation: { clientToken: 't', phase: 'done' } }))).toBeUndefined();
  });
});

describe('machine (cleanup) reconciler', () => {
  const cleaning = aMachine({ state: 'Cleanup', instanceId: 'i-1', cleanup: { instanceId: 'i-1', phase: 'pending', attempts: 0 } });
  const released = anInstance({ status: 'Terminating', siteName: 'job-r1', creation: { clientToken: 'tok-1', phase: 'done' } });
  const snapshot = (overrides: Partial<MachineSnapshot> = {}): MachineSnapshot => ({
    machine: cleaning,
    instance: released,
    now: NOW,
    timings: cleanupTimings(60_000),
    ...overrides,
  });

  it("claims the DELETE and names it by the instance's site name", () => {
    const decision = machineReconciler.decide(snapshot());
    expect(decision.effect).toEqual({ call: 'delete', machineId: 'm-1', siteName: 'job-r1' });
    expect(decision.change?.machines?.[0]?.after.cleanup).toMatchObject({ phase: 'requested', attempts: 1 });
  });

  it("waits while the instance's create call is in flight, and does nothing outside cleanup", () => {
    const creating = anInstance({ status: 'Terminating', creation: { clientToken: 'tok-1', phase: 'in-flight', leaseUntil: iso(addMs(NOW, 1_000)) } });
    expect(machineReconciler.decide(snapshot({ instance: creating }))).toEqual({});
    expect(machineReconciler.decide(snapshot({ machine: aMachine() }))).toEqual({});
  });

  it('settles "gone" by returning the machine to the pool and "accepted" by waiting for the report as long as the site says', () => {
    const timings = cleanupTimings(5_000);
    // The claim waits for the report as long as the site says, from when the DELETE is sent.
    const requested = machineReconciler.decide(snapshot({ timings })).change!.machines![0]!.after;
    expect(requested.cleanup).toMatchObject({ phase: 'requested', leaseUntil: iso(addMs(NOW, 5_000)) });
    const request = { call: 'delete' as const, machineId: 'm-1', siteName: 'job-r1' };
    // The agent answers a second later: accepted keeps the claim's lease.
    const settle = (kind: 'gone' | 'accepted') =>
      machineReconciler.effects!.settle(snapshot({ machine: requested, timings, now: addMs(NOW, 1_000) }), request, { call: 'delete', outcome: { kind } });
    expect(settle('gone')?.machines?.[0]?.after).toMatchObject({ state: 'Ready', cleanup: undefined });
    expect(settle('accepted')?.machines?.[0]?.after.cleanup).toMatchObject({ accepted: true, leaseUntil: iso(addMs(NOW, 5_000)) });
  });

  it('asks the agent once the report is overdue, and settles its answer', () => {
    const awaiting = {
      ...cleaning,
      cleanup: { instanceId: 'i-1', phase: 'requested' as const, attempts: 1, accepted: true, checks: 0, leaseUntil: iso(addMs(NOW, -1)) },
    };
    const decision = machineReconciler.decide(snapshot({ machine: awaiting }));
    expect(decision.effect).toEqual({ call: 'status', machineId: 'm-1', siteName: 'job-r1' });
    expect(decision.change?.machines?.[0]?.after.cleanup).toMatchObject({ checks: 1, leaseUntil: iso(addMs(NOW, 30_000)) });
    const request = { call: 'status' as const, machineId: 'm-1', siteName: 'job-r1' };
    const settle = (kind: 'absent' | 'present' | 'cleaning') =>
      machineReconciler.effects!.settle(snapshot({ machine: awaiting }), request, { call: 'status', outcome: { kind } });
    expect(settle('absent')?.machines?.[0]?.after).toMatchObject({ state: 'Ready', cleanup: undefined });
    expect(settle('present')?.machines?.[0]?.after.cleanup).toEqual({ instanceId: 'i-1', phase: 'pending', attempts: 1 });
    expect(settle('cleaning')).toBeNull();
  });

  it('looks again when the create a release may be waiting for is over, not when it ended Ready', () => {
    const concerns = machineReconciler.watches.instance!.concerns;
    const inFlight = anInstance({ status: 'Terminating', creation: { clientToken: 't', phase: 'in-flight', leaseUntil: 'L' } });
    const done = anInstance({ status: 'Terminating', creation: { clientToken: 't', phase: 'done' } });
    expect([...concerns(inFlight, done, 'i-1')]).toEqual([{ id: 'm-1', related: { instances: ['i-1'] } }]);
    expect([...concerns(inFlight, { ...done, status: 'Failed' }, 'i-1')]).toEqual([{ id: 'm-1', related: { instances: ['i-1'] } }]);
    // A create that ended Ready was not released meanwhile: no cleanup waits for it.
    expect([...concerns({ ...inFlight, status: 'Provisioning' }, { ...done, status: 'Ready' }, 'i-1')]).toEqual([]);
    expect([...concerns(anInstance(), inFlight, 'i-1')]).toEqual([]);
  });

  it('is concerned by a machine whose DELETE is to be claimed, or whose cleanup fell due, with its instance read along', () => {
    const concerns = (before: Machine | null, after: Machine | null) => [...machineReconciler.watches.machine!.concerns(before, after, 'm-1')];
    const requested = { ...cleaning, cleanup: { instanceId: 'i-1', phase: 'requested' as const, attempts: 1, leaseUntil: 'L' } };
    const accepted = { ...requested, cleanup: { ...requested.cleanup, accepted: true } };
    const failed = { ...cleaning, cleanup: { instanceId: 'i-1', phase: 'failed' as const, attempts: 1 } };
    expect(concerns(aMachine({ state: 'Assigned' }), cleaning)).toEqual([{ id: 'm-1', related: { instances: ['i-1'] } }]);
    expect(concerns(null, null)).toEqual(['m-1']);
    // A claimed or accepted DELETE waits for its lease: only the sweep's delivery (same image both sides) counts.
    expect(concerns(cleaning, requested)).toEqual([]);
    expect(concerns(requested, accepted)).toEqual([]);
    expect(concerns(accepted, accepted)).toEqual([{ id: 'm-1', related: { instances: ['i-1'] } }]);
    expect(concerns(requested, failed)).toEqual([]);
    expect(concerns(accepted, aMachine())).toEqual([]);
  });

  it('settles first on the snapshot its claim left', () => {
    const claim = machineReconciler.decide(snapshot()).change!;
    const advanced = machineReconciler.advance!(snapshot(), claim, addMs(NOW, 5))!;
    expect(advanced.machine).toEqual({ ...claim.machines![0]!.after, version: cleaning.version + 1 });
    expect(advanced.instance).toBe(released);
  });
});

describe('meta-instance reconciler', () => {
  const snapshot = (overrides: Partial<MetaSnapshot> = {}): MetaSnapshot => ({
    meta: aMetaInstance(),
    members: [],
    replacements: noReplacements,
    candidates: [aMachine({ id: 'm-free', lastHeartbeatAt: iso(NOW) })],
    pinned: new Map(),
    heartbeat: { rosterSeenAt: iso(NOW), timeoutMs: 30_000 },
    now: NOW,
    rules: { maxConsecutiveFailures: 3, backoffBaseMs: 1_000, backoffMaxMs: 60_000 },
    newInstance: () => ({ id: 'i-new', org: 'acme', name: 'i-new', labels: {}, clientToken: 'ct', createdBy: 'meta-instance:mi-1' }),
    ...overrides,
  });

  it('places and asks to look again at once, on the state its change leaves', () => {
    const decision = metaInstanceReconciler.decide(snapshot());
    expect(decision.change?.instances?.[0]?.after).toMatchObject({ id: 'i-new', machineId: 'm-free', metaInstanceId: 'mi-1' });
    expect(decision.requeueAt).toEqual(NOW);
    expect(decision.summary).toBe('placed 1');
  });

  it('decides nothing once satisfied', () => {
    const member = {
      instance: anInstance({ id: 'i-new', machineId: 'm-free', status: 'Ready', metaInstanceId: 'mi-1' }),
      machine: aMachine({ id: 'm-free', state: 'Assigned', instanceId: 'i-new', lastHeartbeatAt: iso(NOW) }),
    };
    expect(metaInstanceReconciler.decide(snapshot({ meta: aMetaInstance({ status: 'Ready', waitingSince: undefined }), members: [member] }))).toEqual({});
  });

  it("watches its members' instances: a status change a decision reads", () => {
    const concerns = (before: Instance | null, after: Instance | null) =>
      [...metaInstanceReconciler.watches.instance!.concerns(before, after, 'i-1')].filter(Boolean);
    const member = (status: Instance['status']) => anInstance({ metaInstanceId: 'mi-1', status });
    expect(concerns(member('Provisioning'), member('Ready'))).toEqual(['mi-1', 'mi-1']);
    expect(concerns(member('Ready'), member('Terminating'))).toContain('mi-1');
    expect(concerns(member('Provisioning'), member('Failed'))).toContain('mi-1');
    expect(concerns(null, member('Provisioning'))).toEqual(['mi-1']);
    expect(concerns(member('Terminating'), null)).toEqual(['mi-1']);
    // A create claim (status unchanged), or a member already out going further (Terminating to Terminated): no.
    expect(concerns(member('Provisioning'), member('Provisioning'))).toEqual([]);
    expect(concerns(member('Terminating'), member('Terminated'))).toEqual([]);
    expect(concerns(member('Failed'), member('Terminated'))).toContain('mi-1');
  });

  it("watches its members' machines: health, heartbeat, rack and binding, not a cleanup's progress", () => {
    const concerns = (before: Machine | null, after: Machine | null) =>
      [...metaInstanceReconciler.watches.machine!.concerns(before, after, 'm-1')].filter(Boolean);
    const bound = aMachine({ state: 'Assigned', instanceId: 'i-1', boundMetaInstanceId: 'mi-1' });
    const degraded = { ...bound, healthOverrides: [buildOverride('m-1', { template: 'degraded' }, 'ops', AT)] };
    expect(concerns(bound, degraded)).toEqual(['mi-1']);
    expect(concerns(bound, { ...bound, heartbeatLive: false, heartbeatStaleAt: 'S' })).toEqual(['mi-1']);
    expect(concerns(aMachine(), bound)).toEqual(['mi-1']);
    expect(concerns(null, bound)).toEqual(['mi-1']);
    expect(concerns(bound, null)).toEqual(['mi-1']);
    expect(concerns(degraded, degraded)).toEqual(['mi-1', 'mi-1']);
    // Released for cleanup, the cleanup's claims, labels: nothing a decision reads. Unbound once clean: the member
    // is Terminated in the same change and no longer read.
    const cleaning = { ...degraded, state: 'Cleanup' as const, cleanup: { instanceId: 'i-1', phase: 'pending' as const, attempts: 0 } };
    expect(concerns(degraded, cleaning)).toEqual([]);
    expect(concerns(cleaning, { ...cleaning, cleanup: { ...cleaning.cleanup, phase: 'requested', leaseUntil: 'L' } })).toEqual([]);
    expect(concerns(bound, { ...bound, labels: { a: 'b' } })).toEqual([]);
    expect(concerns(cleaning, { ...aMachine(), healthOverrides: cleaning.healthOverrides })).toEqual([]);
  });

  it("is due while a member's machine is failed by an override, or once its heartbeat counts as stale", () => {
    const due = metaInstanceReconciler.watches.machine!.dueAt!;
    const bound = aMachine({ state: 'Assigned', instanceId: 'i-1', boundMetaInstanceId: 'mi-1', updatedAt: 'U' });
    expect(due(bound)).toBeUndefined();
    expect(due({ ...bound, healthOverrides: [buildOverride('m-1', { template: 'degraded' }, 'ops', AT)] })).toBe('U');
    expect(due({ ...bound, heartbeatLive: false, heartbeatStaleAt: 'S' })).toBe('S');
    expect(due({ ...bound, state: 'Cleanup', heartbeatLive: false, heartbeatStaleAt: 'S' })).toBeUndefined();
  });
});

describe('wait-queue reconciler', () => {
  it('wakes the waiting meta-instances in the order they wait', () => {
    const waiting = [aMetaInstance({ id: 'mi-old' }), aMetaInstance({ id: 'mi-new' })];
    expect(waitQueueReconciler.decide({ waiting, free: 1, reservedFree: new Map(), now: new Date(AT), turn: 0 })).toEqual({
      enqueue: [
        { entity: 'meta-instance', id: 'mi-old' },
        { entity: 'meta-instance', id: 'mi-new' },
      ],
    });
  });

  it('is concerned by a machine that can take an instance and by a replacement that stopped provisioning', () => {
    const { machine, instance } = waitQueueReconciler.watches;
    expect([...machine!.concerns(null, aMachine({ machineType: 'h100' }), 'm-1')]).toEqual(['h100']);
    expect([...machine!.concerns(null, aMachine({ state: 'Assigned', instanceId: 'i-1' }), 'm-1')]).toEqual([]);
    expect([...instance!.concerns(anInstance({ replacement: true }), anInstance({ replacement: true, status: 'Ready' }), 'i-1')]).toEqual(['gb200']);
    expect([...instance!.concerns(anInstance(), anInstance({ status: 'Ready' }), 'i-1')]).toEqual([]);
  });

  it('is not concerned by a machine that was free before and still is, unless its heartbeat or type changed', () => {
    const { machine } = waitQueueReconciler.watches;
    const free = aMachine();
    expect([...machine!.concerns(aMachine({ state: 'Cleanup' }), free, 'm-1')]).toEqual(['gb200']);
    expect([...machine!.concerns(free, { ...free, labels: { a: 'b' } }, 'm-1')]).toEqual([]);
    expect([...machine!.concerns({ ...free, heartbeatLive: false }, free, 'm-1')]).toEqual(['gb200']);
    expect([...machine!.concerns(free, { ...free, lastHeartbeatAt: 'later' }, 'm-1')]).toEqual(['gb200']);
    expect([...machine!.concerns(free, free, 'm-1')]).toEqual(['gb200']);
  });
});

describe('fleet-summary reconciler', () => {
  it("is concerned by a change that moves the machine's entry, not one that only bumps its version", () => {
    const concerns = (before: Machine | null, after: Machine | null) => [...fleetSummaryReconciler.watches.machine!.concerns(before, after, 'm-1')];
    const placement = JSON.stringify(['m-1', 'gb200', 'r1']);
    const cleaning = aMachine({ state: 'Cleanup', instanceId: 'i-1', cleanup: { instanceId: 'i-1', phase: 'pending', attempts: 0 } });
    expect(concerns(aMachine({ state: 'Assigned', instanceId: 'i-1' }), cleaning)).toEqual([placement]);
    expect(concerns(cleaning, { ...cleaning, version: 9, cleanup: { instanceId: 'i-1', phase: 'requested', attempts: 1, leaseUntil: 'L' } })).toEqual([]);
    expect(concerns(cleaning, cleaning)).toEqual([placement]);
    // A reservation moves no counter, but the rack map shows it: the entry changes.
    expect(concerns(aMachine(), aMachine({ version: 2, reservation: { id: 'res-1', org: 'acme' } }))).toEqual([placement]);
    expect(concerns(aMachine(), aMachine({ rack: 'r2' }))).toEqual([JSON.stringify(['m-1', 'gb200', 'r2']), placement]);
    expect(concerns(null, null)).toEqual(['m-1']);
  });

  it('fills a batch while its racks and counter items fit one transaction', () => {
    const room = fleetSummaryReconciler.batch!.room();
    const placement = (machine: number, rack: number) => JSON.stringify([`m-${machine}`, 'gb200', `r${rack}`]);
    // Many machines of few racks: a rack and a counter item are counted once.
    for (let m = 0; m < 40; m++) expect(room.admit(placement(m, m % 4))).toBe(true);
    let racks = 4;
    while (room.admit(placement(1_000 + racks, racks))) racks += 1;
    // Each new rack brings itself and at most one new counter item, until the next one would pass 100 items.
    expect(racks).toBeGreaterThanOrEqual(50);
    expect(racks).toBeLessThanOrEqual(97);
    expect(room.admit(placement(2_000, 0))).toBe(true);
    expect(room.admit('bare-machine-id')).toBe(false);

    const bare = fleetSummaryReconciler.batch!.room();
    for (let m = 0; m < 50; m++) expect(bare.admit(`m-${m}`)).toBe(true);
    expect(bare.admit('m-50')).toBe(false);
  });

  it('asks to look again only when its commit lost the race', () => {
    const m = aMachine();
    const decision = fleetSummaryReconciler.decide({
      placements: [{ machineId: 'm-1', machineType: 'gb200', rack: 'r1' }],
      machines: new Map([['m-1', m]]),
      racks: new Map(),
      shards: new Map(),
    });
    expect(decision.change).toBeDefined();
    expect(decision).toMatchObject({ retryIfLost: true });
    expect(decision.requeueAt).toBeUndefined();
  });
});

describe('registry', () => {
  it('writes the earliest due time of all watchers of a record', () => {
    const cleaning = aMachine({
      state: 'Cleanup',
      instanceId: 'i-1',
      updatedAt: 'B',
      cleanup: { instanceId: 'i-1', phase: 'requested', attempts: 1, leaseUntil: 'C' },
    });
    expect(registry.dueAtOf('machine', cleaning)).toBe('C');
    expect(registry.dueAtOf('machine', aMachine())).toBeUndefined();
  });

  it('maps a committed change to every entity it concerns, once each', () => {
    const before = aMachine({ state: 'Assigned', instanceId: 'i-1', boundMetaInstanceId: 'mi-1' });
    const after = { ...before, state: 'Ready' as const, instanceId: undefined, heartbeatLive: false };
    const refs = registry.concernedByChange({
      machines: [
        { before, after },
        { before, after },
      ],
      history: [],
    });
    expect(refs).toEqual(
      expect.arrayContaining([
        { entity: 'meta-instance', id: 'mi-1' },
        { entity: 'wait-queue', id: 'gb200' },
        { entity: 'fleet-summary', id: JSON.stringify(['m-1', 'gb200', 'r1']) },
        // It leaves its org's capacity.
        { entity: 'org-capacity', id: 'm-1' },
      ]),
    );
    expect(refs).toHaveLength(4);
  });

  it("looks at a machine itself only while it is in cleanup: nothing else is the machine reconciler's to do", () => {
    const ready = aMachine();
    const cleaning = aMachine({ state: 'Cleanup', instanceId: 'i-1', cleanup: { instanceId: 'i-1', phase: 'pending', attempts: 0 } });
    expect(registry.concernedBy('machine', null, ready, 'm-1').map((r) => r.entity)).not.toContain('machine');
    expect(registry.concernedBy('machine', ready, cleaning, 'm-1')).toContainEqual({ entity: 'machine', id: 'm-1', related: { instances: ['i-1'] } });
  });

  it('watches machines, instances, meta-instances, roster buckets, stale checks, maintenance and reservations (the stream filters follow)', () => {
    expect([...registry.watchedRecordKinds].sort()).toEqual([
      'instance',
      'machine',
      'maintenance',
      'meta-instance',
      'reservation',
      'roster-bucket',
      'stale-check',
    ]);
  });
});
