import { describe, expect, it } from 'vitest';
import type { HealthOverride, Machine, RepairLog } from '#domain/core/model.ts';
import {
  closeStorm,
  handOverHeldBack,
  initialSafety,
  nextHeldBack,
  recordQuarantine,
  resetStorm,
  shouldEscalate,
  trimLog,
  type RepairPolicy,
  type ResetStep,
  type SafetyRules,
  type SafetyState,
} from '#domain/repair/safety.ts';
import { aMachine, aRepairRequest } from '#test/support/fixtures.ts';

// The repair-storm breaker and recurring-fault escalation: pure, with injected dates.

const MINUTE = 60_000;
const DAY = 86_400_000;
const t0 = new Date('2026-11-22T10:00:00.000Z');
const at = (ms: number) => new Date(t0.getTime() + ms);

const rules = (overrides: Partial<SafetyRules> = {}): SafetyRules => ({
  maxQuarantines: 3,
  maxFraction: 1,
  windowMs: 60 * MINUTE,
  maxRepairs: 2,
  repairWindowMs: 30 * DAY,
  ...overrides,
});

/** Report machines m1..mN one second apart (or at the given dates); every step's policy and the final state. */
function report(count: number, r: SafetyRules, fleetSize = 1000, start: SafetyState = initialSafety(), when = (i: number) => at(i * 1000)) {
  let safety = start;
  const policies: RepairPolicy[] = [];
  for (let i = 0; i < count; i++) {
    const result = recordQuarantine(safety, fleetSize, `m${i + 1}`, when(i), r);
    safety = result.safety;
    policies.push(result.policy);
  }
  return { safety, policies };
}

const trips = (policies: RepairPolicy[]) => policies.filter((p) => p.kind === 'hold-back' && p.trips).length;

describe('repair-storm breaker: max_quarantines', () => {
  it('below the limit (2 of 3): every report gets a repair request, the breaker stays closed', () => {
    const { safety, policies } = report(2, rules());
    expect(policies).toEqual([{ kind: 'request' }, { kind: 'request' }]);
    expect(safety.repairStorm).toEqual({ state: 'closed', heldBack: [] });
    expect(safety.quarantines).toHaveLength(2);
  });

  it('at the limit (3 of 3): the 3rd report still gets a repair request', () => {
    const { safety, policies } = report(3, rules());
    expect(policies.map((p) => p.kind)).toEqual(['request', 'request', 'request']);
    expect(safety.repairStorm.state).toBe('closed');
  });

  it('just above (4th of 3): the 4th trips the breaker, is held back and is the only held-back machine', () => {
    const { safety, policies } = report(4, rules());
    expect(policies.at(-1)).toEqual({ kind: 'hold-back', trips: true });
    expect(safety.repairStorm).toEqual({ state: 'tripped', trippedAt: at(3000).toISOString(), heldBack: ['m4'] });
  });

  it('max_quarantines = 1: the 1st report is fine, the 2nd trips', () => {
    expect(report(1, rules({ maxQuarantines: 1 })).policies).toEqual([{ kind: 'request' }]);
    expect(report(2, rules({ maxQuarantines: 1 })).policies.at(-1)).toEqual({ kind: 'hold-back', trips: true });
  });
});

describe('repair-storm breaker: max_fraction of the fleet', () => {
  // 0.1 × 40 machines = 4 quarantines allowed; max_quarantines is out of the way.
  const fraction = rules({ maxQuarantines: 1000, maxFraction: 0.1 });

  it('below (3 of 4 allowed) and at (4 of 4): no trip', () => {
    expect(report(3, fraction, 40).safety.repairStorm.state).toBe('closed');
    const atLimit = report(4, fraction, 40);
    expect(atLimit.policies.map((p) => p.kind)).toEqual(['request', 'request', 'request', 'request']);
    expect(atLimit.safety.repairStorm.state).toBe('closed');
  });

  it('just above (5th of 4): trips', () => {
    const { safety, policies } = report(5, fraction, 40);
    expect(policies.at(-1)).toEqual({ kind: 'hold-back', trips: true });
    expect(safety.repairStorm).toMatchObject({ state: 'tripped', heldBack: ['m5'] });
  });

  it('the fleet size matters: the same 5 reports do not trip a fleet of 50 (limit 5), and trip one of 49 (limit 4.9)', () => {
    expect(report(5, fraction, 50).safety.repairStorm.state).toBe('closed');
    expect(report(6, fraction, 50).safety.repairStorm.state).toBe('tripped');
    expect(report(5, fraction, 49).safety.repairStorm.state).toBe('tripped');
  });

  it('whichever limit is lower wins: max_quarantines 2 trips a fleet whose fraction would allow 4', () => {
    const { policies } = report(3, rules({ maxQuarantines: 2, maxFraction: 0.1 }), 40);
    expect(policies.map((p) => p.kind)).toEqual(['request', 'request', 'hold-back']);
  });

  it.each([
    // max_fraction × fleet is an exact whole number of machines, even where the float product is not.
    [0.57, 100, 57],
    [0.29, 100, 29],
    [0.58, 100, 58],
    [0.1, 30, 3],
    [0.7, 10, 7],
  ])('max_fraction %s of %s machines allows exactly %s quarantines', (maxFraction, fleetSize, allowed) => {
    const r = rules({ maxQuarantines: 1000, maxFraction });
    expect(report(allowed, r, fleetSize).safety.repairStorm.state).toBe('closed');
    expect(report(allowed + 1, r, fleetSize).safety.repairStorm.state).toBe('tripped');
  });
});

describe('repair-storm breaker: the window', () => {
  const r = rules({ maxQuarantines: 3, windowMs: 60 * MINUTE });
  // Three quarantines at t0, then a fourth report some time later.
  const three = () => report(3, r, 1000, initialSafety(), () => t0).safety;

  it('a quarantine exactly window_minutes old still counts: the 4th report trips', () => {
    const { policy } = recordQuarantine(three(), 1000, 'm4', at(60 * MINUTE), r);
    expect(policy).toEqual({ kind: 'hold-back', trips: true });
  });

  it('just past the window (1 ms) the old quarantines fall out: no trip, and only the new one is remembered', () => {
    const { policy, safety } = recordQuarantine(three(), 1000, 'm4', at(60 * MINUTE + 1), r);
    expect(policy).toEqual({ kind: 'request' });
    expect(safety.quarantines).toEqual([at(60 * MINUTE + 1).toISOString()]);
  });

  it('a steady trickle below the rate never trips: one report every 21 minutes for a day', () => {
    const { policies } = report(70, r, 1000, initialSafety(), (i) => at(i * 21 * MINUTE));
    expect(policies.every((p) => p.kind === 'request')).toBe(true);
  });

  it('a trickle just above the rate trips: one every 19 minutes puts 4 inside an hour', () => {
    const { policies } = report(4, r, 1000, initialSafety(), (i) => at(i * 19 * MINUTE));
    expect(policies.map((p) => p.kind)).toEqual(['request', 'request', 'request', 'hold-back']);
  });
});

describe('repair-storm breaker: once tripped', () => {
  it('every further report is held back, heldBack accumulates in order, and there is no second trip', () => {
    const { safety, policies } = report(8, rules());
    expect(trips(policies)).toBe(1);
    expect(policies.slice(4)).toEqual(Array(4).fill({ kind: 'hold-back', trips: false }));
    expect(safety.repairStorm).toEqual({ state: 'tripped', trippedAt: at(3000).toISOString(), heldBack: ['m4', 'm5', 'm6', 'm7', 'm8'] });
  });

  it('stays tripped after the window passes (only a provider closes it), and keeps its trippedAt', () => {
    const tripped = report(4, rules()).safety;
    const { safety, policy } = recordQuarantine(tripped, 1000, 'm9', at(10 * DAY), rules());
    expect(policy).toEqual({ kind: 'hold-back', trips: false });
    expect(safety.repairStorm).toMatchObject({ state: 'tripped', trippedAt: at(3000).toISOString(), heldBack: ['m4', 'm9'] });
  });

  it('a machine reported twice while tripped is listed once', () => {
    const tripped = report(4, rules()).safety;
    const again = recordQuarantine(recordQuarantine(tripped, 1000, 'm5', at(10_000), rules()).safety, 1000, 'm5', at(11_000), rules());
    expect(again.safety.repairStorm.heldBack).toEqual(['m4', 'm5']);
  });

  it('does not change the state it was given', () => {
    const tripped = report(4, rules()).safety;
    const copy = structuredClone(tripped);
    recordQuarantine(tripped, 1000, 'm5', at(10_000), rules());
    resetStorm(tripped);
    expect(tripped).toEqual(copy);
  });
});

describe('resetStorm', () => {
  it('returns the held-back machines, closes the breaker and forgets the window', () => {
    const tripped = report(6, rules()).safety;
    const { safety, heldBack } = resetStorm(tripped);
    expect(heldBack).toEqual(['m4', 'm5', 'm6']);
    expect(safety.repairStorm).toEqual({ state: 'closed', heldBack: [] });
    expect(safety.quarantines).toEqual([]);
    expect(safety.version).toBe(tripped.version);
  });

  it('after a reset the count starts again: 3 more reports are requests, the 4th trips again', () => {
    const { safety } = resetStorm(report(4, rules()).safety);
    const { policies, safety: after } = report(4, rules(), 1000, safety, (i) => at(10_000 + i * 1000));
    expect(policies.map((p) => p.kind)).toEqual(['request', 'request', 'request', 'hold-back']);
    expect(trips(policies)).toBe(1);
    expect(after.repairStorm.heldBack).toEqual(['m4']);
  });

  it('resetting a closed breaker hands back nothing', () => {
    expect(resetStorm(initialSafety())).toEqual({ safety: initialSafety(), heldBack: [] });
  });
});

describe('a reset that applies what the breaker held back, one machine per step', () => {
  const tripped = () => report(6, rules()).safety; // m4, m5, m6 held back
  const override = (source: string): HealthOverride => ({ ...aRepairRequest('m5'), source, issue: { category: 'HARDWARE', summary: `${source} on m5` } });
  const quarantined = (...extra: string[]): Machine =>
    aMachine({ id: 'm5', version: 7, healthOverrides: [override('tenant-reported-issue'), ...extra.map(override)] });
  const handOver = (safety: SafetyState, machine: Machine | null) =>
    handOverHeldBack(safety, 'm5', machine, 'ops', at(DAY)) as Extract<ResetStep, { kind: 'hand-over' }>;

  it('the next machine is the first one listed; nothing when the list is empty or there is no record', () => {
    expect(nextHeldBack(tripped())).toBe('m4');
    expect(nextHeldBack(initialSafety())).toBeUndefined();
    expect(nextHeldBack(null)).toBeUndefined();
  });

  it('requests repair on a quarantined machine and drops it from the list in the same change, both guarded by what was read', () => {
    const before = tripped();
    const machine = quarantined();
    const step = handOver(before, machine);
    expect(step).toMatchObject({ kind: 'hand-over', machineId: 'm5', applied: true });
    // The breaker stays tripped: only the list shrinks.
    expect(step.change.safety).toEqual({ before, after: { ...before, repairStorm: { ...before.repairStorm, heldBack: ['m4', 'm6'] } } });
    const [edit] = step.change.machines!;
    expect(edit!.before).toBe(machine);
    const request = edit!.after.healthOverrides.find((o) => o.source === 'repair-request');
    expect(request).toMatchObject({ createdBy: 'ops', issue: { category: 'HARDWARE', summary: 'tenant-reported-issue on m5' } });
    expect(edit!.after.healthOverrides.map((o) => o.source).sort()).toEqual(['repair-request', 'tenant-reported-issue']);
    const events = step.change.history.filter((h) => h.event).map((h) => h.event!.type);
    expect(events).toEqual(['RepairRequested']);
  });

  it.each([
    ['already has a repair request', quarantined('repair-request')],
    ['was escalated (out for repair)', quarantined('out-for-repair')],
    ['is under online repair', quarantined('request-online-repair')],
    ['is no longer quarantined', aMachine({ id: 'm5', healthOverrides: [] })],
    ['no longer exists', null],
  ])('a machine that %s only leaves the list: no machine change, no event', (_why, machine) => {
    const before = tripped();
    const step = handOver(before, machine);
    expect(step).toMatchObject({ kind: 'hand-over', machineId: 'm5', applied: false });
    expect(step.change).toEqual({ safety: { before, after: { ...before, repairStorm: { ...before.repairStorm, heldBack: ['m4', 'm6'] } } }, history: [] });
  });

  it('closing forgets the window and hands back what was still listed; from no record it writes a closed one', () => {
    const before = tripped();
    expect(closeStorm(before)).toEqual({
      kind: 'close',
      heldBack: ['m4', 'm5', 'm6'],
      change: { safety: { before, after: { ...before, quarantines: [], repairStorm: { state: 'closed', heldBack: [] } } }, history: [] },
    });
    expect(closeStorm(null)).toEqual({ kind: 'close', heldBack: [], change: { safety: { before: null, after: initialSafety() }, history: [] } });
  });

  it('stepping through a tripped record hands every machine over exactly once, then closes with nothing dropped', () => {
    let safety = tripped();
    const handed: string[] = [];
    for (let id = nextHeldBack(safety); id !== undefined; id = nextHeldBack(safety)) {
      const step = handOverHeldBack(
        safety,
        id,
        aMachine({ id, healthOverrides: [{ ...aRepairRequest(id), source: 'tenant-reported-issue' }] }),
        'ops',
        at(DAY),
      );
      handed.push(id);
      safety = step.change.safety!.after;
      expect(safety.repairStorm.state).toBe('tripped');
    }
    expect(handed).toEqual(['m4', 'm5', 'm6']);
    expect(closeStorm(safety)).toMatchObject({ heldBack: [], change: { safety: { after: { repairStorm: { state: 'closed', heldBack: [] } } } } });
  });
});

describe('recurring-fault escalation: shouldEscalate', () => {
  const log = (completedAgo: number[], reportsAgo: number[] = []): RepairLog => ({
    completed: completedAgo.map((ms) => at(-ms).toISOString()),
    reports: reportsAgo.map((ms) => ({ at: at(-ms).toISOString(), issue: { category: 'HARDWARE', summary: `report ${ms}` } })),
  });

  it('below max_repairs (1 of 2 completed repairs): another automated repair', () => {
    expect(shouldEscalate(log([DAY]), t0, rules())).toBe(false);
  });

  it('at max_repairs (2 of 2): escalate', () => {
    expect(shouldEscalate(log([2 * DAY, DAY]), t0, rules())).toBe(true);
  });

  it('above max_repairs (3 of 2): escalate', () => {
    expect(shouldEscalate(log([3 * DAY, 2 * DAY, DAY]), t0, rules())).toBe(true);
  });

  it('no log, or reports without completed repairs: never', () => {
    expect(shouldEscalate(undefined, t0, rules())).toBe(false);
    expect(shouldEscalate(log([], [DAY, 2 * DAY, 3 * DAY]), t0, rules())).toBe(false);
  });

  it('window_days boundary: a repair exactly 30 days old counts, one 1 ms older does not', () => {
    expect(shouldEscalate(log([30 * DAY, DAY]), t0, rules())).toBe(true);
    expect(shouldEscalate(log([30 * DAY + 1, DAY]), t0, rules())).toBe(false);
  });

  it('max_repairs = 1 escalates after the first completed repair', () => {
    expect(shouldEscalate(log([DAY]), t0, rules({ maxRepairs: 1 }))).toBe(true);
    expect(shouldEscalate(log([]), t0, rules({ maxRepairs: 1 }))).toBe(false);
  });

  it('trimLog keeps only the reports and repairs inside the window (the earlier reports an escalation names)', () => {
    const trimmed = trimLog(log([31 * DAY, DAY], [31 * DAY, 30 * DAY, 2 * DAY]), t0, rules());
    expect(trimmed.completed).toEqual([at(-DAY).toISOString()]);
    expect(trimmed.reports.map((r) => r.issue?.summary)).toEqual([`report ${30 * DAY}`, `report ${2 * DAY}`]);
  });
});
