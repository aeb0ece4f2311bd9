import { describe, expect, it } from 'vitest';
import { claimCreate, claimCreateCheck, completeCreate, createLeaseMs, recordCreateCheck } from '#domain/instances/instances.ts';
import type { Instance, InstanceStatus, Machine } from '#domain/core/model.ts';
import { addMs, iso } from '#domain/core/time.ts';
import { aMachine, anInstance, NOW } from '#test/support/fixtures.ts';

// The create's course with the site agent: its lease, its claim, its completion and the checks of a create whose
// answer was lost. Assignment, release and the view are in domain-instances.test.ts.

const machine = (over: Partial<Machine> = {}): Machine => aMachine({ labels: { pool: 'a' }, version: 5, ...over });

const instance = (over: Partial<Instance> = {}): Instance => anInstance({ version: 3, ...over });

const assignedMachine = (over: Partial<Machine> = {}) => machine({ state: 'Assigned', instanceId: 'i-1', ...over });

describe('createLeaseMs', () => {
  /** The worst case spelled out: every attempt times out, with backoff base × attempt between attempts, plus 5 s. */
  const worstCase = (r: { maxAttempts: number; baseDelayMs: number; timeoutMs: number }) => {
    let total = 0;
    for (let attempt = 1; attempt <= r.maxAttempts; attempt++) {
      total += r.timeoutMs;
      if (attempt < r.maxAttempts) total += r.baseDelayMs * attempt;
    }
    return total + 5_000;
  };

  it.each([
    { maxAttempts: 3, baseDelayMs: 250, timeoutMs: 10_000, expected: 35_750 },
    { maxAttempts: 1, baseDelayMs: 250, timeoutMs: 2_000, expected: 7_000 },
    { maxAttempts: 4, baseDelayMs: 100, timeoutMs: 1_000, expected: 9_600 },
    { maxAttempts: 10, baseDelayMs: 10_000, timeoutMs: 30_000, expected: 755_000 },
    { maxAttempts: 2, baseDelayMs: 0, timeoutMs: 500, expected: 6_000 },
  ])('$maxAttempts attempts, base $baseDelayMs ms, timeout $timeoutMs ms → $expected ms', ({ expected, ...retry }) => {
    expect(createLeaseMs(retry)).toBe(expected);
    expect(createLeaseMs(retry)).toBe(worstCase(retry));
  });
});

describe('claimCreate', () => {
  const LEASE = 35_750;

  it('pending → in-flight with a lease', () => {
    const before = instance();
    const change = claimCreate(before, NOW, LEASE);
    expect(change).toEqual({
      instances: [
        {
          before,
          after: { ...before, creation: { clientToken: 'tok-1', phase: 'in-flight', leaseUntil: iso(addMs(NOW, LEASE)) }, updatedAt: iso(NOW) },
        },
      ],
      history: [],
    });
  });

  it('a live lease is not claimed again', () => {
    const held = instance({ creation: { clientToken: 'tok-1', phase: 'in-flight', leaseUntil: iso(addMs(NOW, 1)) } });
    expect(claimCreate(held, NOW, LEASE)).toBeNull();
  });

  it('an expired lease is not sent blindly again: its outcome is asked for first (claimCreateCheck)', () => {
    const lapsed = instance({ creation: { clientToken: 'tok-1', phase: 'in-flight', leaseUntil: iso(addMs(NOW, -1)) } });
    expect(claimCreate(lapsed, NOW, LEASE)).toBeNull();
    expect(claimCreateCheck(lapsed, NOW)).not.toBeNull();
  });

  it('a claim made by one caller blocks another, and the check, until it lapses', () => {
    const first = claimCreate(instance(), NOW, 1_000)!.instances![0]!.after;
    expect(claimCreate(first, addMs(NOW, 999), 1_000)).toBeNull();
    expect(claimCreateCheck(first, addMs(NOW, 999))).toBeNull();
    expect(claimCreateCheck(first, addMs(NOW, 1_001))).not.toBeNull();
  });

  it('done → null', () => {
    expect(claimCreate(instance({ creation: { clientToken: 'tok-1', phase: 'done' } }), NOW, LEASE)).toBeNull();
  });

  it.each(['Ready', 'Repairing', 'Terminating', 'Terminated', 'Failed'] satisfies InstanceStatus[])('%s (not Provisioning) → null', (status) => {
    expect(claimCreate(instance({ status }), NOW, LEASE)).toBeNull();
  });
});

describe('completeCreate', () => {
  const inFlight = (over: Partial<Instance> = {}) =>
    instance({ creation: { clientToken: 'tok-1', phase: 'in-flight', leaseUntil: iso(addMs(NOW, 30_000)) }, ...over });

  it('success: Ready, with the name that succeeded and the attempts added', () => {
    const before = inFlight({ createAttempts: 1 });
    const change = completeCreate(before, assignedMachine(), { ok: true, siteName: 'job-r3', attempts: 3 }, NOW);
    expect(change).toEqual({
      instances: [
        {
          before,
          after: {
            ...before,
            status: 'Ready',
            siteName: 'job-r3',
            createAttempts: 4,
            creation: { clientToken: 'tok-1', phase: 'done' },
            updatedAt: iso(NOW),
          },
        },
      ],
      history: [
        {
          machineId: 'm-1',
          at: iso(NOW),
          actor: 'site-agent',
          action: 'instance-ready',
          instanceId: 'i-1',
          message: 'created as job-r3 after 3 attempt(s)',
          changes: { status: { from: 'Provisioning', to: 'Ready' } },
        },
      ],
    });
    expect(change!.machines).toBeUndefined();
  });

  it('failure: Failed with the reason and the name last sent (a 502 may have left it at the site), and the machine goes to Cleanup', () => {
    const before = inFlight();
    const held = assignedMachine();
    const change = completeCreate(before, held, { ok: false, siteName: 'job-r2', attempts: 2, reason: 'site agent answered 502' }, NOW);
    expect(change!.instances).toEqual([
      {
        before,
        after: {
          ...before,
          status: 'Failed',
          failureReason: 'site agent answered 502',
          createAttempts: 2,
          siteName: 'job-r2',
          creation: { clientToken: 'tok-1', phase: 'done' },
          updatedAt: iso(NOW),
        },
      },
    ]);
    expect(change!.machines).toEqual([
      {
        before: held,
        after: { ...held, state: 'Cleanup', cleanup: { instanceId: 'i-1', phase: 'pending', attempts: 0 }, updatedAt: iso(NOW) },
      },
    ]);
    expect(change!.history).toEqual([
      expect.objectContaining({ action: 'instance-create-failed', instanceId: 'i-1', message: 'site agent answered 502', actor: 'site-agent' }),
    ]);
  });

  it('released meanwhile: stays Terminating but learns its site name', () => {
    const before = inFlight({ status: 'Terminating' });
    const inCleanup = machine({ state: 'Cleanup', instanceId: 'i-1', cleanup: { instanceId: 'i-1', phase: 'pending', attempts: 0 } });
    const change = completeCreate(before, inCleanup, { ok: true, siteName: 'job-r2', attempts: 2 }, NOW);
    expect(change).toEqual({
      instances: [
        {
          before,
          after: { ...before, siteName: 'job-r2', createAttempts: 2, creation: { clientToken: 'tok-1', phase: 'done' }, updatedAt: iso(NOW) },
        },
      ],
      history: [],
    });
  });

  it('released meanwhile and the create failed: stays Terminating with the name last sent for its cleanup, machine untouched', () => {
    const before = inFlight({ status: 'Terminating' });
    const change = completeCreate(before, machine({ state: 'Cleanup', instanceId: 'i-1' }), { ok: false, siteName: 'job-r3', attempts: 3, reason: 'x' }, NOW);
    expect(change!.instances![0]!.after).toMatchObject({ status: 'Terminating', siteName: 'job-r3', createAttempts: 3 });
    expect(change!.instances![0]!.after.failureReason).toBeUndefined();
    expect(change!.machines).toBeUndefined();
  });

  it.each([
    { name: 'pending', creation: { clientToken: 'tok-1', phase: 'pending' } },
    { name: 'done', creation: { clientToken: 'tok-1', phase: 'done' } },
  ] satisfies Array<{ name: string; creation: Instance['creation'] }>)('not in flight ($name) → null', ({ creation }) => {
    expect(completeCreate(instance({ creation }), assignedMachine(), { ok: true, siteName: 'job', attempts: 1 }, NOW)).toBeNull();
  });
});

describe('claimCreateCheck', () => {
  const lapsed = (checks?: number) =>
    instance({
      createAttempts: 1,
      creation: { clientToken: 'tok-1', phase: 'in-flight', leaseUntil: iso(addMs(NOW, -1)), ...(checks === undefined ? {} : { checks }) },
    });

  it.each([
    { checks: undefined, delay: 30_000 },
    { checks: 1, delay: 60_000 },
    { checks: 2, delay: 120_000 },
    { checks: 9, delay: 600_000 },
  ])('a lapsed create after $checks check(s) → check claimed, the next one in $delay ms', ({ checks, delay }) => {
    const before = lapsed(checks);
    expect(claimCreateCheck(before, NOW)).toEqual({
      instances: [
        {
          before,
          after: {
            ...before,
            creation: { clientToken: 'tok-1', phase: 'in-flight', checks: (checks ?? 0) + 1, leaseUntil: iso(addMs(NOW, delay)) },
            updatedAt: iso(NOW),
          },
        },
      ],
      history: [],
    });
  });

  it.each([
    { name: 'a live lease', i: instance({ creation: { clientToken: 'tok-1', phase: 'in-flight', leaseUntil: iso(addMs(NOW, 1)) } }) },
    { name: 'pending', i: instance() },
    { name: 'done', i: instance({ status: 'Ready', creation: { clientToken: 'tok-1', phase: 'done' } }) },
    { name: 'released meanwhile (its cleanup goes ahead; it is never created again)', i: { ...lapsed(0), status: 'Terminating' as const } },
  ])('nothing to ask with $name', ({ i }) => {
    expect(claimCreateCheck(i, NOW)).toBeNull();
  });
});

describe('recordCreateCheck', () => {
  const checking = (over: Partial<Instance> = {}) =>
    instance({ createAttempts: 1, creation: { clientToken: 'tok-1', phase: 'in-flight', checks: 1, leaseUntil: iso(addMs(NOW, 30_000)) }, ...over });

  it('present → the create happened: Ready, the lost call counted as one attempt', () => {
    const change = recordCreateCheck(checking(), assignedMachine(), { kind: 'present' }, NOW);
    expect(change!.instances![0]!.after).toMatchObject({
      status: 'Ready',
      siteName: 'job',
      createAttempts: 2,
      creation: { clientToken: 'tok-1', phase: 'done' },
    });
    expect(change!.history).toEqual([expect.objectContaining({ action: 'instance-ready', instanceId: 'i-1' })]);
  });

  it('absent → the create is to be sent again, with the same client token', () => {
    const before = checking();
    expect(recordCreateCheck(before, assignedMachine(), { kind: 'absent' }, NOW)).toEqual({
      instances: [{ before, after: { ...before, creation: { clientToken: 'tok-1', phase: 'pending' }, updatedAt: iso(NOW) } }],
      history: [],
    });
    const resend = recordCreateCheck(before, assignedMachine(), { kind: 'absent' }, NOW)!.instances![0]!.after;
    expect(claimCreate(resend, NOW, 1_000)?.instances?.[0]?.after.creation).toEqual({
      clientToken: 'tok-1',
      phase: 'in-flight',
      leaseUntil: iso(addMs(NOW, 1_000)),
    });
  });

  it.each([{ kind: 'cleaning' as const }, { kind: 'error' as const, reason: 'site agent unreachable' }])(
    '$kind → null (the claim already set the next check)',
    (outcome) => {
      expect(recordCreateCheck(checking(), assignedMachine(), outcome, NOW)).toBeNull();
    },
  );

  it('an outcome recorded meanwhile, or a release, is left alone', () => {
    expect(
      recordCreateCheck(checking({ status: 'Ready', creation: { clientToken: 'tok-1', phase: 'done' } }), assignedMachine(), { kind: 'absent' }, NOW),
    ).toBeNull();
    expect(recordCreateCheck(checking({ status: 'Terminating' }), assignedMachine(), { kind: 'absent' }, NOW)).toBeNull();
  });
});
