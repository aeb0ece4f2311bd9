import { describe, expect, it } from 'vitest';
import {
  claimCleanup,
  claimStatusCheck,
  cleanupTimings,
  finishCleanup,
  recordDeleteOutcome,
  recordStatusCheck,
  startCleanup,
  type CleanupTimings,
} from '#domain/instances/cleanup.ts';
import type { Instance, InstanceStatus, Machine, MachineCleanup } from '#domain/core/model.ts';
import { Rejection } from '#domain/core/rejection.ts';
import { addMs, iso } from '#domain/core/time.ts';
import { cleanupDueAt } from '#reconcilers/due-times.ts';
import { aMachine, anInstance, NOW } from '#test/support/fixtures.ts';

const timings: CleanupTimings = { reportTimeoutMs: 600_000, retryBaseMs: 2_000, retryMaxMs: 7_000 };

const inCleanup = (cleanup: Partial<MachineCleanup> = {}, over: Partial<Machine> = {}): Machine =>
  aMachine({ state: 'Cleanup', instanceId: 'i-1', cleanup: { instanceId: 'i-1', phase: 'pending', attempts: 0, ...cleanup }, version: 9, ...over });

const instance = (over: Partial<Instance> = {}): Instance =>
  anInstance({ status: 'Terminating', createAttempts: 1, creation: { clientToken: 'tok-1', phase: 'done' }, version: 2, ...over });

const inFlight = (leaseMsFromNow: number): Instance['creation'] => ({
  clientToken: 'tok-1',
  phase: 'in-flight',
  leaseUntil: iso(addMs(NOW, leaseMsFromNow)),
});

describe('startCleanup', () => {
  it('moves the machine holding the instance into Cleanup, pending', () => {
    const held: Machine = { ...inCleanup(), state: 'Assigned', cleanup: undefined };
    expect(startCleanup(held, 'i-1', iso(NOW))).toEqual([
      { before: held, after: { ...held, state: 'Cleanup', cleanup: { instanceId: 'i-1', phase: 'pending', attempts: 0 }, updatedAt: iso(NOW) } },
    ]);
  });

  it('leaves a machine that holds another instance alone', () => {
    expect(startCleanup({ ...inCleanup(), state: 'Assigned', instanceId: 'i-2' }, 'i-1', iso(NOW))).toEqual([]);
  });
});

describe('claimCleanup', () => {
  it('pending → requested, attempts + 1, lease for the report timeout', () => {
    const before = inCleanup();
    expect(claimCleanup(before, instance(), NOW, timings)).toEqual({
      machines: [
        {
          before,
          after: {
            ...before,
            cleanup: { instanceId: 'i-1', phase: 'requested', attempts: 1, leaseUntil: iso(addMs(NOW, timings.reportTimeoutMs)) },
            updatedAt: iso(NOW),
          },
        },
      ],
      history: [],
    });
  });

  it('claims without an instance record too', () => {
    expect(claimCleanup(inCleanup(), null, NOW, timings)?.machines?.[0]?.after.cleanup?.phase).toBe('requested');
  });

  it('waits while the create call is in flight', () => {
    expect(claimCleanup(inCleanup(), instance({ creation: inFlight(5_000) }), NOW, timings)).toBeNull();
  });

  it('goes ahead once the create has finished', () => {
    expect(claimCleanup(inCleanup(), instance({ creation: { clientToken: 'tok-1', phase: 'done' } }), NOW, timings)).not.toBeNull();
  });

  it('goes ahead when the create claim has lapsed (its caller crashed; a Terminating instance is never re-created)', () => {
    const change = claimCleanup(inCleanup(), instance({ status: 'Terminating', creation: inFlight(-1) }), NOW, timings);
    expect(change?.machines?.[0]?.after.cleanup).toMatchObject({ phase: 'requested', attempts: 1 });
  });

  it('a live lease is not claimed again', () => {
    const requested = inCleanup({ phase: 'requested', attempts: 1, leaseUntil: iso(addMs(NOW, 1)) });
    expect(claimCleanup(requested, instance(), NOW, timings)).toBeNull();
  });

  it('an expired lease is claimed again, counting the attempt', () => {
    const requested = inCleanup({ phase: 'requested', attempts: 2, leaseUntil: iso(addMs(NOW, -1)), error: 'site agent 503' });
    const change = claimCleanup(requested, instance(), NOW, timings);
    expect(change?.machines?.[0]?.after.cleanup).toEqual({
      instanceId: 'i-1',
      phase: 'requested',
      attempts: 3,
      leaseUntil: iso(addMs(NOW, timings.reportTimeoutMs)),
      error: 'site agent 503',
    });
  });

  it('an accepted DELETE is not sent again, not even once its report is overdue', () => {
    expect(claimCleanup(inCleanup({ phase: 'requested', attempts: 1, accepted: true, leaseUntil: iso(addMs(NOW, -1)) }), instance(), NOW, timings)).toBeNull();
  });

  it('failed → null (an operator has to look)', () => {
    expect(claimCleanup(inCleanup({ phase: 'failed', attempts: 1, error: 'disk' }), instance(), NOW, timings)).toBeNull();
  });

  it.each([
    { name: 'Ready', m: { state: 'Ready', instanceId: undefined, cleanup: undefined } },
    { name: 'Assigned', m: { state: 'Assigned', cleanup: undefined } },
    { name: 'Cleanup without cleanup record', m: { cleanup: undefined } },
  ] satisfies Array<{ name: string; m: Partial<Machine> }>)('not in cleanup ($name) → null', ({ m }) => {
    expect(claimCleanup(inCleanup({}, m), instance(), NOW, timings)).toBeNull();
  });
});

describe('recordDeleteOutcome', () => {
  const requested = (attempts: number) => inCleanup({ phase: 'requested', attempts, leaseUntil: iso(addMs(NOW, 600_000)) });

  it("accepted → wait for the report until the claim's lease: the machine's due time does not move", () => {
    // Claimed two seconds before the agent's answer came.
    const claimedLease = iso(addMs(NOW, timings.reportTimeoutMs - 2_000));
    const before = { ...requested(2), cleanup: { ...requested(2).cleanup!, leaseUntil: claimedLease, error: 'site agent answered 503' } };
    const change = recordDeleteOutcome(before, instance(), { kind: 'accepted' }, NOW, timings);
    expect(change).toEqual({
      machines: [
        {
          before,
          after: {
            ...before,
            cleanup: { instanceId: 'i-1', phase: 'requested', attempts: 2, accepted: true, checks: 0, leaseUntil: claimedLease },
            updatedAt: iso(NOW),
          },
        },
      ],
      history: [],
    });
    expect(cleanupDueAt(change!.machines![0]!.after)).toBe(cleanupDueAt(before));
  });

  it('gone → machine Ready without instance, instance Terminated', () => {
    const before = requested(1);
    const owned = instance();
    const change = recordDeleteOutcome(before, owned, { kind: 'gone' }, NOW, timings);
    expect(change!.machines).toEqual([{ before, after: { ...before, state: 'Ready', instanceId: undefined, cleanup: undefined, updatedAt: iso(NOW) } }]);
    expect(change!.instances).toEqual([{ before: owned, after: { ...owned, status: 'Terminated', updatedAt: iso(NOW) } }]);
    expect(change!.history).toEqual([expect.objectContaining({ action: 'cleanup-succeeded', actor: 'site-agent', instanceId: 'i-1' })]);
  });

  it.each([
    { attempts: 1, backoff: 2_000 },
    { attempts: 2, backoff: 4_000 },
    { attempts: 3, backoff: 6_000 },
    { attempts: 4, backoff: 7_000 },
    { attempts: 40, backoff: 7_000 },
  ])('error after $attempts attempt(s) → retry in $backoff ms', ({ attempts, backoff }) => {
    const before = requested(attempts);
    const change = recordDeleteOutcome(before, instance(), { kind: 'error', reason: 'site agent answered 503' }, NOW, timings);
    expect(change).toEqual({
      machines: [
        {
          before,
          after: {
            ...before,
            cleanup: { instanceId: 'i-1', phase: 'requested', attempts, leaseUntil: iso(addMs(NOW, backoff)), error: 'site agent answered 503' },
            updatedAt: iso(NOW),
          },
        },
      ],
      history: [],
    });
  });

  it('the site timings back off 2 s per attempt up to 5 min, whatever the report timeout', () => {
    const lease = (attempts: number) =>
      recordDeleteOutcome(requested(attempts), null, { kind: 'error', reason: 'x' }, NOW, cleanupTimings(5_000))!.machines![0]!.after.cleanup!.leaseUntil;
    expect(lease(3)).toBe(iso(addMs(NOW, 6_000)));
    expect(lease(1_000)).toBe(iso(addMs(NOW, 300_000)));
  });

  it.each([
    { name: 'pending', m: inCleanup() },
    { name: 'failed', m: inCleanup({ phase: 'failed', attempts: 1 }) },
    { name: 'back to Ready', m: inCleanup({}, { state: 'Ready', instanceId: undefined, cleanup: undefined }) },
  ])('not awaiting a DELETE answer ($name) → null', ({ m }) => {
    expect(recordDeleteOutcome(m, instance(), { kind: 'gone' }, NOW, timings)).toBeNull();
    expect(recordDeleteOutcome(m, instance(), { kind: 'error', reason: 'x' }, NOW, timings)).toBeNull();
  });
});

describe('finishCleanup', () => {
  const requested = () => inCleanup({ phase: 'requested', attempts: 1, leaseUntil: iso(addMs(NOW, 600_000)) });

  it('ok → machine Ready with no instance, instance Terminated', () => {
    const before = requested();
    const owned = instance();
    const change = finishCleanup(before, owned, { ok: true }, 'site-agent', NOW);
    const after = change.machines![0]!.after;
    expect(after.state).toBe('Ready');
    expect(after.instanceId).toBeUndefined();
    expect(after.cleanup).toBeUndefined();
    expect(after.version).toBe(before.version);
    expect(change.instances).toEqual([{ before: owned, after: { ...owned, status: 'Terminated', updatedAt: iso(NOW) } }]);
    expect(change.history).toEqual([
      {
        machineId: 'm-1',
        at: iso(NOW),
        actor: 'site-agent',
        action: 'cleanup-succeeded',
        instanceId: 'i-1',
        changes: { state: { from: 'Cleanup', to: 'Ready' } },
      },
    ]);
  });

  it('not ok → phase failed with the message, machine stays in Cleanup, instance still ends', () => {
    const before = requested();
    const change = finishCleanup(before, instance(), { ok: false, message: 'GPU 3 did not reset' }, 'site-agent', NOW);
    expect(change.machines).toEqual([
      {
        before,
        after: {
          ...before,
          cleanup: { instanceId: 'i-1', phase: 'failed', attempts: 1, leaseUntil: undefined, error: 'GPU 3 did not reset' },
          updatedAt: iso(NOW),
        },
      },
    ]);
    expect(change.machines![0]!.after.state).toBe('Cleanup');
    expect(change.machines![0]!.after.instanceId).toBe('i-1');
    expect(change.instances?.[0]?.after.status).toBe('Terminated');
    expect(change.history).toEqual([
      expect.objectContaining({ action: 'cleanup-failed', message: 'GPU 3 did not reset', changes: { cleanup: { to: 'failed' } } }),
    ]);
  });

  it('not ok without a message says "cleanup failed"', () => {
    const change = finishCleanup(requested(), null, { ok: false }, 'site-agent', NOW);
    expect(change.machines![0]!.after.cleanup!.error).toBe('cleanup failed');
    expect(change.instances).toEqual([]);
  });

  it.each([
    { status: 'Terminating', ends: true },
    { status: 'Provisioning', ends: true },
    { status: 'Ready', ends: true },
    { status: 'Failed', ends: false },
    { status: 'Terminated', ends: false },
  ] satisfies Array<{ status: InstanceStatus; ends: boolean }>)('an instance that is $status is ended: $ends', ({ status, ends }) => {
    const owned = instance({ status });
    const change = finishCleanup(requested(), owned, { ok: true }, 'site-agent', NOW);
    expect(change.instances).toEqual(ends ? [{ before: owned, after: { ...owned, status: 'Terminated', updatedAt: iso(NOW) } }] : []);
  });

  it.each([
    { name: 'Ready', m: inCleanup({}, { state: 'Ready', instanceId: undefined, cleanup: undefined }) },
    { name: 'Assigned', m: inCleanup({}, { state: 'Assigned', cleanup: undefined }) },
    { name: 'Cleanup without cleanup record', m: inCleanup({}, { cleanup: undefined }) },
  ])('not in Cleanup ($name) → 409 invalid-state', ({ m }) => {
    let thrown: unknown;
    try {
      finishCleanup(m, instance(), { ok: true }, 'site-agent', NOW);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(Rejection);
    expect(thrown).toMatchObject({ status: 409, code: 'invalid-state' });
  });
});

describe('claimStatusCheck', () => {
  const awaiting = (leaseMsFromNow: number, checks = 0) =>
    inCleanup({ phase: 'requested', attempts: 1, accepted: true, checks, leaseUntil: iso(addMs(NOW, leaseMsFromNow)) });

  it('waits while the report is not overdue', () => {
    expect(claimStatusCheck(awaiting(1), NOW)).toBeNull();
  });

  it.each([
    { checks: 0, delay: 30_000 },
    { checks: 1, delay: 60_000 },
    { checks: 3, delay: 240_000 },
    { checks: 4, delay: 480_000 },
    { checks: 5, delay: 600_000 },
    { checks: 30, delay: 600_000 },
  ])('overdue after $checks check(s) → check claimed, next one in $delay ms', ({ checks, delay }) => {
    const before = awaiting(-1, checks);
    expect(claimStatusCheck(before, NOW)).toEqual({
      machines: [{ before, after: { ...before, cleanup: { ...before.cleanup, checks: checks + 1, leaseUntil: iso(addMs(NOW, delay)) }, updatedAt: iso(NOW) } }],
      history: [],
    });
  });

  it.each([
    { name: 'pending', m: inCleanup() },
    { name: 'DELETE not accepted yet', m: inCleanup({ phase: 'requested', attempts: 1, leaseUntil: iso(addMs(NOW, -1)) }) },
    { name: 'failed', m: inCleanup({ phase: 'failed', attempts: 1, accepted: true }) },
    { name: 'back to Ready', m: inCleanup({}, { state: 'Ready', instanceId: undefined, cleanup: undefined }) },
  ])('nothing to ask when $name', ({ m }) => {
    expect(claimStatusCheck(m, NOW)).toBeNull();
  });
});

describe('recordStatusCheck', () => {
  const checking = () => inCleanup({ phase: 'requested', attempts: 2, accepted: true, checks: 1, leaseUntil: iso(addMs(NOW, 30_000)) });

  it('absent → the cleanup ends as if the report had come: machine Ready, instance Terminated', () => {
    const before = checking();
    const owned = instance();
    const change = recordStatusCheck(before, owned, { kind: 'absent' }, NOW)!;
    expect(change.machines).toEqual([
      {
        before,
        after: {
          ...before,
          state: 'Ready',
          instanceId: undefined,
          assignedAt: undefined,
          boundMetaInstanceId: undefined,
          cleanup: undefined,
          updatedAt: iso(NOW),
        },
      },
    ]);
    expect(change.instances).toEqual([{ before: owned, after: { ...owned, status: 'Terminated', updatedAt: iso(NOW) } }]);
    expect(change.history).toEqual([
      expect.objectContaining({ action: 'cleanup-succeeded', instanceId: 'i-1', message: expect.stringMatching(/report was lost/) }),
    ]);
  });

  it('absent keeps the quarantine a release put on the machine', () => {
    const quarantined = { ...checking(), healthOverrides: [{ source: 'tenant-reported-issue' }] as Machine['healthOverrides'] };
    expect(recordStatusCheck(quarantined, instance(), { kind: 'absent' }, NOW)!.machines![0]!.after.healthOverrides).toEqual(quarantined.healthOverrides);
  });

  it('present → the DELETE is to be sent again, attempts kept', () => {
    const before = checking();
    expect(recordStatusCheck(before, instance(), { kind: 'present' }, NOW)).toEqual({
      machines: [{ before, after: { ...before, cleanup: { instanceId: 'i-1', phase: 'pending', attempts: 2 }, updatedAt: iso(NOW) } }],
      history: [],
    });
  });

  it('present, then claimed: the DELETE goes out again', () => {
    const resend = recordStatusCheck(checking(), instance(), { kind: 'present' }, NOW)!.machines![0]!.after;
    expect(claimCleanup(resend, instance(), NOW, timings)?.machines?.[0]?.after.cleanup).toMatchObject({ phase: 'requested', attempts: 3 });
  });

  it.each([{ kind: 'cleaning' as const }, { kind: 'error' as const, reason: 'site agent unreachable' }])(
    '$kind → null (the claim already set the next check)',
    (outcome) => {
      expect(recordStatusCheck(checking(), instance(), outcome, NOW)).toBeNull();
    },
  );

  it('a cleanup that ended meanwhile (the report came after all) → null', () => {
    const ready = inCleanup({}, { state: 'Ready', instanceId: undefined, cleanup: undefined });
    expect(recordStatusCheck(ready, instance(), { kind: 'absent' }, NOW)).toBeNull();
    expect(recordStatusCheck(inCleanup(), instance(), { kind: 'absent' }, NOW)).toBeNull();
  });
});
