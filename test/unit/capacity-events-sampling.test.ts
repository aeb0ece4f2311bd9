import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { capacityMovesOf, standingOf, type CapacityMove, type CapacityStanding } from '#domain/capacity/capacity-events.ts';
import type { HealthOverride, Instance, Machine } from '#domain/core/model.ts';
import { addMs, iso } from '#domain/core/time.ts';
import { aMachine, anInstance, T0 } from '#test/support/fixtures.ts';

// The org-capacity reconciler accounts a machine's standing whenever the stream brings it a record, and reads the
// machine as it is by then: late, duplicated or reordered records make it see some of the machine's states and not
// others. Whichever it sees, an org's feed must say the same in the end: what it skipped can only be a delivery and
// withdrawal that undo each other. What it must see is each instance's hold as it ends, before the machine's cleanup
// ends it (docs/design.md, "The capacity-events feed").

const ORGS = ['acme', 'globex'] as const;
type Org = (typeof ORGS)[number];

type Action =
  | { kind: 'reserve'; org: Org }
  | { kind: 'unreserve' }
  | { kind: 'assign'; org: Org }
  | { kind: 'claim-for-repair' }
  | { kind: 'ready' }
  | { kind: 'release'; issue: boolean }
  | { kind: 'cleanup-done' }
  | { kind: 'override'; source: 'repair-request' | 'maintenance' }
  | { kind: 'repaired' }
  | { kind: 'maintenance-done' }
  | { kind: 'retire' };

const action: fc.Arbitrary<Action> = fc.oneof(
  fc.constantFrom(...ORGS).map((org): Action => ({ kind: 'reserve', org })),
  fc.constant<Action>({ kind: 'unreserve' }),
  fc.constantFrom(...ORGS).map((org): Action => ({ kind: 'assign', org })),
  fc.constant<Action>({ kind: 'claim-for-repair' }),
  fc.constant<Action>({ kind: 'ready' }),
  fc.boolean().map((issue): Action => ({ kind: 'release', issue })),
  fc.constant<Action>({ kind: 'cleanup-done' }),
  fc.constantFrom('repair-request' as const, 'maintenance' as const).map((source): Action => ({ kind: 'override', source })),
  fc.constant<Action>({ kind: 'repaired' }),
  fc.constant<Action>({ kind: 'maintenance-done' }),
  fc.constant<Action>({ kind: 'retire' }),
);

interface State {
  machine: Machine;
  instance: Instance | null;
}

const override = (source: string, at: string): HealthOverride => ({
  source,
  mode: 'merge',
  alerts: [{ id: source, target: 'm-1', message: source, classifications: ['PreventAllocations'] }],
  createdBy: 'ops',
  createdAt: at,
});

const without = (machine: Machine, ...sources: string[]): HealthOverride[] => machine.healthOverrides.filter((o) => !sources.includes(o.source));

/** The machine's next state under an action, as the product would leave it; null when the product would refuse it. */
function next({ machine, instance }: State, act: Action, step: number): State | null {
  const at = iso(addMs(T0, step * 1_000));
  const holding = instance !== null && machine.instanceId === instance.id;
  const inService = machine.healthOverrides.length === 0 && !machine.retired;
  const live = holding && ['Provisioning', 'Ready'].includes(instance.status);
  const assign = (org: string): State => {
    const placed = anInstance({ id: `i-${step}`, org, status: 'Provisioning', createdAt: at });
    return { machine: { ...machine, instanceId: placed.id, state: 'Assigned', assignedAt: at }, instance: placed };
  };
  switch (act.kind) {
    // Reservations here come and go between holds: an org's own hold is no entry of the feed, so a reservation
    // joining or leaving under it is an arrival or departure without its counterpart (domain tests cover those).
    case 'reserve':
      if (holding || machine.reservation || machine.retired) return null;
      return { machine: { ...machine, reservation: { id: `rsv-${act.org}`, org: act.org } }, instance };
    case 'unreserve': {
      if (holding || !machine.reservation) return null;
      const { reservation: _gone, ...rest } = machine;
      return { machine: rest, instance };
    }
    case 'assign':
      return holding || !inService || (machine.reservation && machine.reservation.org !== act.org) ? null : assign(act.org);
    case 'claim-for-repair':
      return holding || !machine.healthOverrides.some((o) => o.source === 'repair-request') ? null : assign('fixit');
    case 'ready':
      return holding && instance.status === 'Provisioning' ? { machine, instance: { ...instance, status: 'Ready' } } : null;
    case 'release': {
      if (!live) return null;
      const reported = act.issue && instance.org !== 'fixit' ? [override('tenant-reported-issue', at)] : [];
      const healthOverrides =
        instance.org === 'fixit' ? without(machine, 'repair-request', 'tenant-reported-issue') : [...machine.healthOverrides, ...reported];
      return { machine: { ...machine, state: 'Cleanup', healthOverrides }, instance: { ...instance, status: 'Terminating' } };
    }
    case 'cleanup-done': {
      if (!holding || instance.status !== 'Terminating') return null;
      const { instanceId: _i, assignedAt: _a, ...rest } = machine;
      return { machine: { ...rest, state: 'Ready' }, instance: { ...instance, status: 'Terminated' } };
    }
    // A repair tenant's machine is in the provider's hands already: no new override comes while the tenant holds it.
    case 'override':
      if ((holding && instance.org === 'fixit') || machine.retired || machine.healthOverrides.some((o) => o.source === act.source)) return null;
      return { machine: { ...machine, healthOverrides: [...machine.healthOverrides, override(act.source, at)] }, instance };
    // A machine comes back from repair or maintenance once no instance holds it (or through its repair tenant's release).
    case 'repaired':
      return holding ? null : { machine: { ...machine, healthOverrides: without(machine, 'repair-request', 'tenant-reported-issue') }, instance };
    case 'maintenance-done':
      return holding ? null : { machine: { ...machine, healthOverrides: without(machine, 'maintenance') }, instance };
    case 'retire':
      return holding || machine.retired ? null : { machine: { ...machine, retired: { at, by: 'ops', reason: 'end of life' } }, instance };
  }
}

/** The machine's states under the actions the product accepts, each with the instance holding it then (if any). */
function life(actions: Action[]): Array<{ standing: CapacityStanding; hold: string | undefined }> {
  let state: State = { machine: aMachine(), instance: null };
  const states = [{ standing: standingOf(state.machine, null), hold: undefined as string | undefined }];
  actions.forEach((act, step) => {
    const after = next(state, act, step + 1);
    if (!after) return;
    state = after;
    states.push({ standing: standingOf(state.machine, state.instance), hold: state.machine.instanceId });
  });
  return states;
}

/** The feed's moves of an account that saw these standings, from a node that saw none. */
function movesSeeing(standings: CapacityStanding[]): CapacityMove[] {
  let before: CapacityStanding | null = null;
  return standings.flatMap((after) => {
    const moves = capacityMovesOf(before, after);
    before = after;
    return moves;
  });
}

/** Per org, its entries once each delivery and withdrawal that undo each other are taken out. */
function netPerOrg(moves: CapacityMove[]): Record<string, string[]> {
  const net: Record<string, string[]> = {};
  for (const { org, change } of moves) {
    const mine = (net[org] ??= []);
    if (mine.length > 0 && mine.at(-1) !== change) mine.pop();
    else mine.push(change);
  }
  return Object.fromEntries(Object.entries(net).filter(([, changes]) => changes.length > 0));
}

describe('the capacity-events feed, whichever states of a machine the stream lets it see', () => {
  it('says in the end what it says seeing every state, when it sees how each hold ends and the last state', () => {
    fc.assert(
      fc.property(fc.array(action, { maxLength: 40 }), fc.array(fc.boolean(), { minLength: 41, maxLength: 41 }), (actions, looks) => {
        const states = life(actions);
        // The last state of each hold (its release, while the machine's cleanup runs) is seen, and the last of all.
        const seen = states.filter((state, i) => looks[i] || i === states.length - 1 || (state.hold !== undefined && states[i + 1]?.hold !== state.hold));
        expect(netPerOrg(movesSeeing(seen.map((s) => s.standing)))).toEqual(netPerOrg(movesSeeing(states.map((s) => s.standing))));
      }),
      { numRuns: 2_000 },
    );
  });

  it('tells the org its machine was taken for repair by its own report, when the stream first reacts after the release', () => {
    const states = life([{ kind: 'assign', org: 'acme' }, { kind: 'ready' }, { kind: 'release', issue: true }]);
    expect(movesSeeing([states[0]!.standing, states.at(-1)!.standing])).toEqual([{ org: 'acme', change: 'withdrawn', reason: 'repair' }]);
    expect(movesSeeing(states.map((s) => s.standing))).toEqual([{ org: 'acme', change: 'withdrawn', reason: 'repair' }]);
  });

  it('tells a repair tenant nothing of the machine it claimed in repair, whenever the stream reacts', () => {
    const states = life([{ kind: 'override', source: 'repair-request' }, { kind: 'claim-for-repair' }, { kind: 'ready' }, { kind: 'release', issue: false }]);
    expect(movesSeeing(states.map((s) => s.standing))).toEqual([]);
    expect(movesSeeing([states[0]!.standing, states.at(-1)!.standing])).toEqual([]);
  });
});
