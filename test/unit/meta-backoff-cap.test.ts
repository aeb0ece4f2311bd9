import { describe, expect, it } from 'vitest';
import type { HeartbeatView } from '#domain/core/health.ts';
import {
  backoffMs,
  noReplacements,
  reconcileMetaInstance,
  type Member,
  type MetaDecision,
  type MetaRules,
  type MetaSnapshot,
  type ReplacementsView,
} from '#domain/meta-instances/meta-instances.ts';
import { choosePlacement } from '#domain/meta-instances/placement.ts';
import type { Instance, Machine, MetaInstance } from '#domain/core/model.ts';
import { buildOverride } from '#domain/core/overrides.ts';
import { aMachine, aMetaInstance, anInstance } from '#test/support/fixtures.ts';

// Meta-instance retry backoff and the site-wide cap on replacements in flight. Pure, injected dates.

const now = new Date('2026-11-22T10:00:00.000Z');
const at = now.toISOString();
const heartbeat: HeartbeatView = { rosterSeenAt: at, timeoutMs: 30_000 };

const rules = (overrides: Partial<MetaRules> = {}): MetaRules => ({
  maxConsecutiveFailures: 3,
  backoffBaseMs: 5_000,
  backoffMaxMs: 600_000,
  ...overrides,
});

function machine(id: string, rack = 'rack-1', extra: Partial<Machine> = {}): Machine {
  return aMachine({ id, rack, lastHeartbeatAt: at, version: 1, createdAt: at, updatedAt: at, ...extra });
}

function meta(minNodes: number, extra: Partial<MetaInstance> = {}): MetaInstance {
  return aMetaInstance({ minNodes, waitingSince: at, createdBy: 'acme-user', createdAt: at, updatedAt: at, version: 4, ...extra });
}

/** A member on its own machine; `status` other than Ready/Provisioning makes it a dead member. */
function member(n: number, status: Instance['status'] = 'Ready', machineExtra: Partial<Machine> = {}): Member {
  const instance = anInstance({
    id: `i-${n}`,
    name: `i-${n}`,
    machineId: `m-member-${n}`,
    status,
    metaInstanceId: 'mi-1',
    createAttempts: 1,
    siteName: `i-${n}`,
    creation: { clientToken: `ct-${n}`, phase: 'done' },
    createdBy: 'meta-instance:mi-1',
    createdAt: at,
    updatedAt: at,
    version: 2,
  });
  return { instance, machine: machine(`m-member-${n}`, 'rack-1', { state: 'Assigned', instanceId: instance.id, assignedAt: at, ...machineExtra }) };
}

const freeMachines = (count: number, rack = 'rack-1') => Array.from({ length: count }, (_, i) => machine(`m-free-${rack}-${i}`, rack));

function snapshot(s: {
  meta: MetaInstance;
  members?: Member[];
  free?: Machine[];
  rules?: MetaRules;
  replacements?: ReplacementsView;
  when?: Date;
}): MetaSnapshot {
  let next = 0;
  return {
    meta: s.meta,
    members: s.members ?? [],
    replacements: s.replacements ?? noReplacements,
    candidates: s.free ?? freeMachines(10),
    pinned: new Map(),
    heartbeat,
    now: s.when ?? now,
    rules: s.rules ?? rules(),
    newInstance: () => {
      next += 1;
      return { id: `i-new-${next}`, org: 'acme', name: `i-new-${next}`, labels: {}, clientToken: `ct-new-${next}`, createdBy: 'meta-instance:mi-1' };
    },
  };
}

const commit = (decision: MetaDecision) => {
  if (decision.kind !== 'commit') throw new Error(`expected a commit, got ${decision.kind}`);
  return decision.change;
};
const placed = (decision: MetaDecision) =>
  decision.kind === 'commit' ? (decision.change.instances ?? []).filter((v) => v.before === null).map((v) => v.after) : [];
const metaAfter = (decision: MetaDecision) => commit(decision).metaInstances!.find((v) => v.after.id === 'mi-1')!.after;

describe('backoffMs', () => {
  const r = rules({ maxConsecutiveFailures: 3, backoffBaseMs: 5_000, backoffMaxMs: 600_000 });

  it('no wait up to and at max_consecutive_failures (0..3)', () => {
    expect([0, 1, 2, 3].map((n) => backoffMs(n, r))).toEqual([0, 0, 0, 0]);
  });

  it('just past the limit: base × 2^(n − max − 1), doubling', () => {
    expect([4, 5, 6, 7, 8, 9, 10].map((n) => backoffMs(n, r))).toEqual([5_000, 10_000, 20_000, 40_000, 80_000, 160_000, 320_000]);
  });

  it('capped at backoff_max: below the cap (10 → 320 s), the first doubling past it (11 → 640 s) is cut to 600 s, and it stays there', () => {
    expect(backoffMs(10, r)).toBe(320_000);
    expect(backoffMs(11, r)).toBe(600_000);
    expect(backoffMs(50, r)).toBe(600_000);
    expect(backoffMs(5_000, r)).toBe(600_000);
  });

  it('a cap that a doubling hits exactly: below, at and above it', () => {
    const exact = rules({ backoffBaseMs: 5_000, backoffMaxMs: 320_000 });
    expect([9, 10, 11].map((n) => backoffMs(n, exact))).toEqual([160_000, 320_000, 320_000]);
  });

  it('max_consecutive_failures = 0: the first failure already waits base', () => {
    expect(backoffMs(0, rules({ maxConsecutiveFailures: 0 }))).toBe(0);
    expect(backoffMs(1, rules({ maxConsecutiveFailures: 0 }))).toBe(5_000);
  });

  it('recording failures: up to the limit the meta-instance stays Placing with no nextAttemptAt; past it, Retrying until now + backoff', () => {
    const failing = (failuresBefore: number) =>
      metaAfter(
        reconcileMetaInstance(
          snapshot({
            meta: meta(1, { status: 'Ready', consecutiveFailures: failuresBefore }),
            members: [member(1, 'Ready', { healthOverrides: [buildOverride('m-member-1', { template: 'degraded' }, 'ops', at)] })],
          }),
        ),
      );
    expect(failing(2)).toMatchObject({
      status: 'Placing',
      consecutiveFailures: 3,
      nextAttemptAt: undefined,
      lastFailureError: 'machine m-member-1: health-override:degraded',
    });
    expect(failing(3)).toMatchObject({ status: 'Retrying', consecutiveFailures: 4, nextAttemptAt: new Date(now.getTime() + 5_000).toISOString() });
    expect(failing(4)).toMatchObject({ status: 'Retrying', consecutiveFailures: 5, nextAttemptAt: new Date(now.getTime() + 10_000).toISOString() });
  });

  it('nothing is placed before nextAttemptAt (1 ms before); at nextAttemptAt it places again', () => {
    const waiting = meta(1, { status: 'Retrying', consecutiveFailures: 4, nextAttemptAt: at });
    expect(reconcileMetaInstance(snapshot({ meta: waiting, when: new Date(now.getTime() - 1) }))).toEqual({ kind: 'none' });
    const decision = reconcileMetaInstance(snapshot({ meta: waiting }));
    expect(placed(decision)).toHaveLength(1);
    expect(metaAfter(decision)).toMatchObject({ status: 'Ready', consecutiveFailures: 0, nextAttemptAt: undefined });
  });
});

describe('membership and the replacements record, kept on records and written with each decision', () => {
  it('an instance joins the membership in the change that creates it; one seen Terminated leaves it', () => {
    const gone = member(3, 'Terminated');
    const decision = reconcileMetaInstance(
      snapshot({ meta: meta(3, { memberIds: ['i-1', 'i-2', 'i-3'], consecutiveFailures: 1 }), members: [member(1), member(2), gone] }),
    );
    expect(placed(decision).map((i) => i.id)).toEqual(['i-new-1']);
    expect(metaAfter(decision).memberIds).toEqual(['i-1', 'i-2', 'i-new-1']);
  });

  it('a member a decision terminates (its machine gone) leaves the membership in that same change', () => {
    const orphan: Member = { ...member(2), machine: null };
    const decision = reconcileMetaInstance(snapshot({ meta: meta(2, { status: 'Ready', memberIds: ['i-1', 'i-2'] }), members: [member(1), orphan] }));
    expect(commit(decision).instances?.map((v) => [v.after.id, v.after.status])).toEqual([['i-2', 'Terminated']]);
    expect(metaAfter(decision).memberIds).toEqual(['i-1']);
  });

  it('a placement of replacements adds them to the record, guarded by the version read, keeping only those still in flight', () => {
    const record = { instanceIds: ['i-elsewhere', 'i-done'], version: 4 };
    const decision = reconcileMetaInstance(
      snapshot({
        meta: meta(3, { consecutiveFailures: 1 }),
        members: [member(1), member(2)],
        rules: rules({ maxReplacementsInFlight: 5 }),
        replacements: { record, inFlight: ['i-elsewhere'] },
      }),
    );
    expect(commit(decision).replacements).toEqual({ before: record, after: { instanceIds: ['i-elsewhere', 'i-new-1'], version: 4 } });
  });

  it('a first placement is no replacement: the record is not written', () => {
    expect(commit(reconcileMetaInstance(snapshot({ meta: meta(2), rules: rules({ maxReplacementsInFlight: 5 }) }))).replacements).toBeUndefined();
  });
});

describe('replacement cap (max_replacements_in_flight) in reconcileMetaInstance', () => {
  /** The cap, and the site's replacements record holding `inFlight` instances still provisioning. */
  const cap = (inFlight: number, max = 5) => {
    const ids = Array.from({ length: inFlight }, (_, i) => `i-elsewhere-${i}`);
    return { rules: rules({ maxReplacementsInFlight: max }), replacements: { record: { instanceIds: ids, version: 7 }, inFlight: ids } };
  };
  /** 3 wanted, 2 healthy, one failure already counted: one replacement needed. */
  const replacingOne = (inFlight: number, extra: Partial<MetaInstance> = {}) =>
    snapshot({ meta: meta(3, { status: 'Placing', consecutiveFailures: 1, ...extra }), members: [member(1), member(2)], ...cap(inFlight) });

  it('below the cap (3 in flight + 1 needed ≤ 5): placed, and the new instance counts as a replacement', () => {
    const decision = reconcileMetaInstance(replacingOne(3));
    expect(placed(decision)).toMatchObject([{ replacement: true, metaInstanceId: 'mi-1', status: 'Provisioning' }]);
    expect(metaAfter(decision)).toMatchObject({ status: 'Ready', placementError: undefined, consecutiveFailures: 0 });
  });

  it('at the cap (4 in flight + 1 needed = 5): placed', () => {
    expect(placed(reconcileMetaInstance(replacingOne(4)))).toHaveLength(1);
  });

  it('above the cap (5 in flight + 1 needed = 6): refused, waiting for a replacement slot, nothing placed', () => {
    const decision = reconcileMetaInstance(replacingOne(5));
    expect(placed(decision)).toEqual([]);
    expect(commit(decision).machines ?? []).toEqual([]);
    expect(metaAfter(decision)).toMatchObject({
      status: 'Placing',
      placementError: 'waiting for a replacement slot: 5 of 5 replacements in flight site-wide',
      consecutiveFailures: 1,
    });
  });

  it('a meta-instance already waiting for a slot with the same message is not rewritten (waiting costs nothing)', () => {
    const waiting = replacingOne(5, { placementError: 'waiting for a replacement slot: 5 of 5 replacements in flight site-wide' });
    expect(reconcileMetaInstance(waiting)).toEqual({ kind: 'none' });
  });

  it('when a slot frees up, the waiting meta-instance is placed and its placementError cleared', () => {
    const waiting = replacingOne(4, { placementError: 'waiting for a replacement slot: 5 of 5 replacements in flight site-wide' });
    const decision = reconcileMetaInstance(waiting);
    expect(placed(decision)).toHaveLength(1);
    expect(metaAfter(decision).placementError).toBeUndefined();
  });

  it('several replacements are counted together: 3 in flight + 2 needed = 5 places both; 4 + 2 places one now; 5 + 2 none', () => {
    const two = (inFlight: number) => snapshot({ meta: meta(3, { consecutiveFailures: 2 }), members: [member(1)], ...cap(inFlight) });
    expect(placed(reconcileMetaInstance(two(3)))).toHaveLength(2);
    const partly = reconcileMetaInstance(two(4));
    expect(placed(partly)).toHaveLength(1);
    expect(metaAfter(partly).placementError).toBe('waiting for a replacement slot: placed 1 of 2, cap 5 in flight site-wide');
    const refused = reconcileMetaInstance(two(5));
    expect(placed(refused)).toEqual([]);
    expect(metaAfter(refused).placementError).toBe('waiting for a replacement slot: 5 of 5 replacements in flight site-wide');
  });

  it('a replacement for a meta-instance whose only members all failed is still a replacement (capped)', () => {
    const decision = reconcileMetaInstance(
      snapshot({ meta: meta(2, { consecutiveFailures: 2 }), members: [member(1, 'Terminated'), member(2, 'Terminated')], ...cap(5) }),
    );
    expect(placed(decision)).toEqual([]);
    expect(metaAfter(decision).placementError).toMatch(/^waiting for a replacement slot/);
  });

  it('initial placements are not capped, even with the site far past the cap, and are not replacements', () => {
    for (const inFlight of [5, 6, 500]) {
      const decision = reconcileMetaInstance(snapshot({ meta: meta(4), ...cap(inFlight) }));
      const instances = placed(decision);
      expect(instances).toHaveLength(4);
      expect(instances.every((i) => i.replacement === undefined)).toBe(true);
    }
  });

  it('no cap configured: replacements are placed whatever is in flight', () => {
    expect(placed(reconcileMetaInstance({ ...replacingOne(1_000), rules: rules() }))).toHaveLength(1);
  });

  it('from failure to waiting: a member fails (released, counted), and the replacement then waits for a slot', () => {
    const broken = member(2, 'Ready', { healthOverrides: [buildOverride('m-member-2', { template: 'degraded' }, 'ops', at)] });
    const first = reconcileMetaInstance(snapshot({ meta: meta(2, { status: 'Ready' }), members: [member(1), broken], ...cap(5) }));
    const afterFailure = metaAfter(first);
    expect(afterFailure).toMatchObject({ consecutiveFailures: 1, lastFailureError: 'machine m-member-2: health-override:degraded' });
    const released = commit(first).instances!.find((v) => v.after.id === 'i-2')!.after;
    expect(released.status).toBe('Terminating');
    const second = reconcileMetaInstance(snapshot({ meta: afterFailure, members: [member(1), { ...broken, instance: released }], ...cap(5) }));
    expect(placed(second)).toEqual([]);
    expect(metaAfter(second)).toMatchObject({ status: 'Placing', placementError: 'waiting for a replacement slot: 5 of 5 replacements in flight site-wide' });
    const third = reconcileMetaInstance(snapshot({ meta: metaAfter(second), members: [member(1), { ...broken, instance: released }], ...cap(4) }));
    expect(placed(third)).toMatchObject([{ replacement: true }]);
  });

  it('a group needing more replacements than the cap is replaced a few at a time, the rest waiting for slots', () => {
    const members = Array.from({ length: 6 }, (_, i) => member(i + 1, 'Terminated'));
    const decision = reconcileMetaInstance(snapshot({ meta: meta(6, { consecutiveFailures: 6 }), members, ...cap(0, 5) }));
    expect(placed(decision)).toHaveLength(5);
    expect(decision.kind === 'commit' && decision.change.metaInstances![0]!.after).toMatchObject({
      consecutiveFailures: 6,
      placementError: 'waiting for a replacement slot: placed 5 of 6, cap 5 in flight site-wide',
    });
  });
});

describe('choosePlacement (what the cap counts)', () => {
  const isFree = () => [];

  it('asks for exactly the missing members', () => {
    const plan = choosePlacement(meta(3), [member(1)], freeMachines(5), new Map(), isFree);
    expect(plan).toMatchObject({ kind: 'place' });
    expect(plan.kind === 'place' && plan.machines).toHaveLength(2);
  });

  it('meta-instances placed at the same moment reach for different machines, each the same ones every time', () => {
    const first = (id: string) => {
      const plan = choosePlacement(meta(1, { id }), [], freeMachines(50), new Map(), isFree);
      return plan.kind === 'place' ? plan.machines[0]!.id : undefined;
    };
    const ids = Array.from({ length: 8 }, (_, i) => `mi-burst-${i}`);
    expect(new Set(ids.map(first)).size).toBeGreaterThan(4);
    expect(ids.map(first)).toEqual(ids.map(first));
  });

  it('not enough free machines: an error naming how many are free', () => {
    expect(choosePlacement(meta(3), [], freeMachines(2), new Map(), isFree)).toEqual({
      kind: 'error',
      message: 'needs 3 more gb200 machine(s); 2 free',
      shortOfCapacity: true,
    });
  });

  it('same rack: a lone replacement stays in the group’s rack when that rack has room', () => {
    const plan = choosePlacement(
      meta(2, { placement: { sameRack: true } }),
      [member(1)],
      [...freeMachines(3, 'rack-2'), ...freeMachines(1, 'rack-1')],
      new Map(),
      isFree,
    );
    expect(plan.kind === 'place' && plan.machines.map((m) => m.rack)).toEqual(['rack-1']);
  });

  it('same rack with no room left in it: the group regroups to a rack that holds it whole', () => {
    expect(choosePlacement(meta(2, { placement: { sameRack: true } }), [member(1)], freeMachines(3, 'rack-2'), new Map(), isFree)).toEqual({
      kind: 'regroup',
      place: 'rack-2',
    });
  });
});
