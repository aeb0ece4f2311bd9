import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { capacityMovesOf, standingOf, type CapacityMove, type CapacityStanding } from '#domain/capacity/capacity-events.ts';
import type { HealthOverride, Instance, Machine } from '#domain/core/model.ts';
import { addMs, iso } from '#domain/core/time.ts';
import { aMachine, anInstance, T0 } from '#test/support/fixtures.ts';

// The org-capacity reconciler accounts a machine's standing whenever the stream brings it a record, and reads the
// machine as it is by then: late, duplicated or reordered records make it see some of the machine's states and not
// others. Whichever it sees, an org's feed must say the same in the end: what it skipped can only be a delivery and
// withdrawal that undo each other. What it must see of each instance's hold is one state while it lasts, and how it
// ends: its release, or the machine just after its cleanup (docs/design.md, "The capacity-events feed").

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

/** A state as the reconciler reads it: the machine, and every instance that held it so far, as each is then. */
interface Seen {
  machine: Machine;
  instances: ReadonlyMap<string, Instance>;
  hold: string | undefined;
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
      return { machine: { ...rest, state: 'Ready' }, instance: { ...instance, status: 'Terminated', updatedAt: at } };
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

/** The machine's states under the actions the product accepts. */
function life(actions: Action[]): Seen[] {
  let state: State = { machine: aMachine(), instance: null };
  let instances = new Map<string, Instance>();
  const states: Seen[] = [{ machine: state.machine, instances, hold: undefined }];
  actions.forEach((act, step) => {
    const after = next(state, act, step + 1);
    if (!after) return;
    state = after;
    if (state.instance) instances = new Map(instances).set(state.instance.id, state.instance);
    states.push({ machine: state.machine, instances, hold: state.machine.instanceId });
  });
  return states;
}

/**
 * The feed's moves of an account that saw these states, from a node that saw none: each standing read as the
 * reconciler reads it, with the instance the node last named as holding the machine.
 */
function movesSeeing(states: Seen[]): CapacityMove[] {
  let before: CapacityStanding | null = null;
  return states.flatMap(({ machine, instances }) => {
    const named = machine.instanceId ? (instances.get(machine.instanceId) ?? null) : null;
    const after = standingOf(machine, named, before?.heldBy ? (instances.get(before.heldBy) ?? null) : null);
    const moves = capacityMovesOf(before, after);
    before = after;
    return moves;
  });
}

/**
 * The states a reconciler sees: those `looks` picks, the last, and for each hold one of its states (its first when
 * `looks` picks none) and how it ends, its last state or the one after its cleanup as `ends` picks.
 */
function sampled(states: Seen[], looks: boolean[], ends: boolean[]): Seen[] {
  const seen = new Set(states.flatMap((_, i) => (looks[i] || i === states.length - 1 ? [i] : [])));
  let holds = 0;
  states.forEach((state, i) => {
    if (state.hold === undefined || states[i - 1]?.hold === state.hold) return;
    let last = i;
    while (states[last + 1]?.hold === state.hold) last++;
    if (![...seen].some((j) => j >= i && j <= last)) seen.add(i);
    seen.add(ends[holds++] && last + 1 < states.length ? last + 1 : last);
  });
  return states.filter((_, i) => seen.has(i));
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
  it('says in the end what it says seeing every state, when it sees a state of each hold, how it ends, and the last state', () => {
    const flags = fc.array(fc.boolean(), { minLength: 41, maxLength: 41 });
    fc.assert(
      fc.property(fc.array(action, { maxLength: 40 }), flags, flags, (actions, looks, ends) => {
        const states = life(actions);
        expect(netPerOrg(movesSeeing(sampled(states, looks, ends)))).toEqual(netPerOrg(movesSeeing(states)));
      }),
      { numRuns: 2_000 },
    );
  });

  it('tells the org its machine was taken for repair by its own report, when the stream first reacts after the release', () => {
    const states = life([{ kind: 'assign', org: 'acme' }, { kind: 'ready' }, { kind: 'release', issue: true }]);
    expect(movesSeeing([states[0]!, states.at(-1)!])).toEqual([{ org: 'acme', change: 'withdrawn', reason: 'repair' }]);
    expect(movesSeeing(states)).toEqual([{ org: 'acme', change: 'withdrawn', reason: 'repair' }]);
  });

  it('tells a repair tenant nothing of the machine it claimed in repair, whenever the stream reacts', () => {
    const states = life([{ kind: 'override', source: 'repair-request' }, { kind: 'claim-for-repair' }, { kind: 'ready' }, { kind: 'release', issue: false }]);
    expect(movesSeeing(states)).toEqual([]);
    expect(movesSeeing([states[0]!, states.at(-1)!])).toEqual([]);
  });
});
