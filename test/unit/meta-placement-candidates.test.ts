import { describe, expect, it } from 'vitest';
import {
  homePlace,
  noReplacements,
  reconcileMetaInstance,
  wantsMoreCandidates,
  type Member,
  type MetaSnapshot,
} from '#domain/meta-instances/meta-instances.ts';
import type { Machine, MetaInstance } from '#domain/core/model.ts';
import { CANDIDATE_PAGE, MAX_CANDIDATE_PAGES, loadCandidates, type CandidateReader } from '#runtime/meta-instance-snapshot.ts';
import { aMachine, aMetaInstance, anInstance, NOW } from '#test/support/fixtures.ts';

// How a meta-instance decision finds its candidates: read only while the decision would fail for want of free
// machines, the group's rack first, then the type's allocatable index in rack order. Pure, with an array-backed index.

const free = (id: string, rack: string, extra: Partial<Machine> = {}): Machine => aMachine({ id, rack, ...extra });

/** `count` racks holding `each` free machines, named so they sort after `prefix`'s earlier racks. */
const racks = (prefix: string, count: number, each: number): Machine[] =>
  Array.from({ length: count }, (_, r) => Array.from({ length: each }, (_, i) => free(`${prefix}${r}-m${i}`, `${prefix}${String(r).padStart(4, '0')}`))).flat();

function snapshot(meta: Partial<MetaInstance>, members: Member[] = [], pinned: Machine[] = []): MetaSnapshot {
  return {
    meta: aMetaInstance(meta),
    members,
    replacements: noReplacements,
    candidates: [],
    pinned: new Map(pinned.map((m) => [m.id, m])),
    heartbeat: { rosterSeenAt: NOW.toISOString(), timeoutMs: 30_000 },
    now: NOW,
    rules: { maxConsecutiveFailures: 3, backoffBaseMs: 5_000, backoffMaxMs: 600_000 },
    newInstance: (machine) => ({
      id: `i-${machine.id}`,
      org: 'acme',
      name: `i-${machine.id}`,
      labels: {},
      clientToken: `ct-${machine.id}`,
      createdBy: 'meta-instance:mi-1',
    }),
  };
}

const memberOn = (machine: Machine): Member => ({
  instance: anInstance({ id: `i-${machine.id}`, machineId: machine.id, status: 'Ready', metaInstanceId: 'mi-1' }),
  machine: { ...machine, state: 'Assigned', instanceId: `i-${machine.id}`, boundMetaInstanceId: 'mi-1' },
});

/** The allocatable index of one type as the store orders it (rack, then id), and every read made of it. */
function index(machines: Machine[]) {
  const ordered = [...machines].sort((a, b) => (a.rack === b.rack ? a.id.localeCompare(b.id) : a.rack.localeCompare(b.rack)));
  const reads: Array<{ rack?: string; nextToken?: string }> = [];
  const read: CandidateReader = async ({ limit, nextToken, rack }) => {
    reads.push({ ...(rack === undefined ? {} : { rack }), ...(nextToken === undefined ? {} : { nextToken }) });
    const pool = rack === undefined ? ordered : ordered.filter((m) => m.rack === rack);
    const from = nextToken === undefined ? 0 : Number(nextToken);
    const items = pool.slice(from, from + limit);
    return { items, nextToken: from + limit < pool.length ? String(from + limit) : undefined };
  };
  return { read, reads };
}

describe('wantsMoreCandidates', () => {
  it('is true only while placement would fail for want of free machines', () => {
    const fresh = snapshot({ minNodes: 2 });
    expect(wantsMoreCandidates(fresh)).toBe(true);
    expect(wantsMoreCandidates({ ...fresh, candidates: [free('a', 'r1'), free('b', 'r2')] })).toBe(false);
    const sameRack = snapshot({ minNodes: 2, placement: { sameRack: true } });
    expect(wantsMoreCandidates({ ...sameRack, candidates: [free('a', 'r1'), free('b', 'r2')] })).toBe(true);
    expect(wantsMoreCandidates({ ...sameRack, candidates: [free('a', 'r1'), free('b', 'r2'), free('c', 'r2')] })).toBe(false);
  });

  it('is false when more machines cannot help: satisfied, backing off, deleting, or a pinned machine unavailable', () => {
    const holding = memberOn(free('held', 'r1'));
    expect(wantsMoreCandidates(snapshot({ minNodes: 1, status: 'Ready' }, [holding]))).toBe(false);
    expect(wantsMoreCandidates(snapshot({ minNodes: 2, nextAttemptAt: new Date(NOW.getTime() + 60_000).toISOString() }))).toBe(false);
    expect(wantsMoreCandidates(snapshot({ minNodes: 2, status: 'Deleting' }))).toBe(false);
    const taken = free('pin', 'r1', { state: 'Assigned', instanceId: 'i-other' });
    expect(wantsMoreCandidates(snapshot({ minNodes: 2, machineIds: ['pin'] }, [], [taken]))).toBe(false);
  });
});

describe('homePlace', () => {
  it('is the one rack a same-rack group is bound to by its members or pinned machines', () => {
    expect(homePlace(snapshot({ minNodes: 2, placement: { sameRack: true } }, [memberOn(free('a', 'r7'))]))).toEqual({ rack: 'r7' });
    expect(homePlace(snapshot({ minNodes: 2, placement: { sameRack: true }, machineIds: ['p'] }, [], [free('p', 'r3')]))).toEqual({ rack: 'r3' });
    expect(homePlace(snapshot({ minNodes: 2, placement: { sameRack: false } }, [memberOn(free('a', 'r7'))]))).toBeUndefined();
    expect(homePlace(snapshot({ minNodes: 3, placement: { sameRack: true } }, [memberOn(free('a', 'r7')), memberOn(free('b', 'r8'))]))).toBeUndefined();
    expect(homePlace(snapshot({ minNodes: 2, placement: { sameRack: true } }))).toBeUndefined();
  });
});

describe('loadCandidates', () => {
  it('finds a rack with room beyond the first page: fragmented racks first, then a whole one', async () => {
    // 600 racks with one free machine each fill more than the first page; the rack with room comes after them.
    const fleet = [...racks('a', 600, 1), ...racks('z', 1, 4)];
    const { read, reads } = index(fleet);
    const s = snapshot({ minNodes: 4, placement: { sameRack: true } });
    const candidates = await loadCandidates(s, read);
    expect(reads).toHaveLength(2);
    const decision = reconcileMetaInstance({ ...s, candidates });
    expect(decision.kind).toBe('commit');
    if (decision.kind !== 'commit') return;
    expect(decision.change.machines!.map((v) => v.after.rack)).toEqual(['z0000', 'z0000', 'z0000', 'z0000']);
  });

  it('reads nothing for a group that does not need machines, and only the pinned rack for a pinned same-rack group', async () => {
    const { read, reads } = index([...racks('a', 3, 2), free('p', 'b0001'), free('q', 'b0001')]);
    const holding = memberOn(free('held', 'a0000'));
    expect(await loadCandidates(snapshot({ minNodes: 1, status: 'Ready' }, [holding]), read)).toEqual([]);
    expect(await loadCandidates(snapshot({ minNodes: 1, machineIds: ['p'] }, [], [free('p', 'b0001')]), read)).toEqual([]);
    expect(reads).toEqual([]);

    const pinned = snapshot({ minNodes: 3, machineIds: ['p'], placement: { sameRack: true } }, [], [free('p', 'b0001')]);
    await loadCandidates(pinned, read);
    // Pinned machines fix the rack: it lacks room, and nothing else is read.
    expect(reads).toEqual([{ rack: 'b0001' }]);
  });

  it("replaces a member on the group's own rack with one read of that rack", async () => {
    const { read, reads } = index([...racks('a', 600, 1), free('home-1', 'h0001'), free('home-2', 'h0001')]);
    const s = snapshot({ minNodes: 2, placement: { sameRack: true }, status: 'Placing' }, [memberOn(free('held', 'h0001'))]);
    const candidates = await loadCandidates(s, read);
    expect(reads).toEqual([{ rack: 'h0001' }]);
    expect(candidates.map((m) => m.id)).toEqual(['home-1', 'home-2']);
  });

  it('stops after MAX_CANDIDATE_PAGES reads when no rack anywhere has room', async () => {
    const { read, reads } = index(racks('a', CANDIDATE_PAGE * (MAX_CANDIDATE_PAGES + 2), 1));
    const candidates = await loadCandidates(snapshot({ minNodes: 2, placement: { sameRack: true } }), read);
    expect(reads).toHaveLength(MAX_CANDIDATE_PAGES);
    expect(candidates).toHaveLength(CANDIDATE_PAGE * MAX_CANDIDATE_PAGES);
  });
});

describe('placement in one NVLink domain', () => {
  /** The type's free machines in both indexes' orders: by rack, and (those with a domain) by domain, each then id. */
  function indexes(machines: Machine[]) {
    const byRack = [...machines].sort((a, b) => (a.rack === b.rack ? a.id.localeCompare(b.id) : a.rack.localeCompare(b.rack)));
    const byDomain = machines
      .filter((m) => m.nvlinkDomain !== undefined)
      .sort((a, b) => (a.nvlinkDomain === b.nvlinkDomain ? a.id.localeCompare(b.id) : a.nvlinkDomain!.localeCompare(b.nvlinkDomain!)));
    const reads: Array<Record<string, unknown>> = [];
    const read: CandidateReader = async ({ limit, nextToken, rack, nvlinkDomain, byNvlinkDomain }) => {
      reads.push({
        ...(rack === undefined ? {} : { rack }),
        ...(nvlinkDomain === undefined ? {} : { nvlinkDomain }),
        ...(byNvlinkDomain ? { byNvlinkDomain } : {}),
      });
      const pool =
        rack !== undefined
          ? byRack.filter((m) => m.rack === rack)
          : nvlinkDomain !== undefined
            ? byDomain.filter((m) => m.nvlinkDomain === nvlinkDomain)
            : byNvlinkDomain
              ? byDomain
              : byRack;
      const from = nextToken === undefined ? 0 : Number(nextToken);
      return { items: pool.slice(from, from + limit), nextToken: from + limit < pool.length ? String(from + limit) : undefined };
    };
    return { read, reads };
  }
  const inDomain = (id: string, rack: string, nvlinkDomain: string) => free(id, rack, { nvlinkDomain });

  it('finds a domain with room beyond the first page, across racks, reading the domain index in domain order', async () => {
    // 600 domains with one free machine each, then one domain whose 4 free machines lie in 4 racks that sort first.
    const fragmented = Array.from({ length: 600 }, (_, d) => inDomain(`f${d}`, `r${String(d).padStart(4, '0')}`, `d${String(d).padStart(4, '0')}`));
    const roomy = ['a1', 'a2', 'a3', 'a4'].map((rack) => inDomain(`w-${rack}`, rack, 'z-domain'));
    const { read, reads } = indexes([...fragmented, ...roomy, free('no-domain', 'a0')]);
    const s = snapshot({ minNodes: 4, placement: { sameRack: false, sameNvlinkDomain: true } });
    const candidates = await loadCandidates(s, read);
    expect(reads).toEqual([{ byNvlinkDomain: true }, { byNvlinkDomain: true }]);
    const decision = reconcileMetaInstance({ ...s, candidates });
    expect(decision.kind).toBe('commit');
    if (decision.kind !== 'commit') return;
    expect(decision.change.machines!.map((v) => v.after.nvlinkDomain)).toEqual(Array(4).fill('z-domain'));
    expect(decision.change.metaInstances![0]!.after.status).toBe('Ready');
  });

  it("replaces a member in the group's own domain with one read of that domain, never a machine without a domain", async () => {
    const { read, reads } = indexes([inDomain('home-1', 'r9', 'dom-h'), free('plain', 'r1'), inDomain('other', 'r1', 'dom-o')]);
    const s = snapshot({ minNodes: 2, placement: { sameRack: false, sameNvlinkDomain: true }, status: 'Placing' }, [memberOn(inDomain('held', 'r1', 'dom-h'))]);
    const candidates = await loadCandidates(s, read);
    expect(reads).toEqual([{ nvlinkDomain: 'dom-h' }]);
    const decision = reconcileMetaInstance({ ...s, candidates });
    if (decision.kind !== 'commit') throw new Error('expected a placement');
    expect(decision.change.machines!.map((v) => v.after.id)).toEqual(['home-1']);
  });

  it('says no domain has room, with the best one, when none has', async () => {
    const { read } = indexes([
      inDomain('a', 'r1', 'd1'),
      inDomain('b', 'r1', 'd1'),
      inDomain('c', 'r2', 'd2'),
      free('x', 'r3'),
      free('y', 'r3'),
      free('z', 'r3'),
    ]);
    const s = snapshot({ minNodes: 3, placement: { sameRack: false, sameNvlinkDomain: true } });
    const decision = reconcileMetaInstance({ ...s, candidates: await loadCandidates(s, read) });
    if (decision.kind !== 'commit') throw new Error('expected a placement error');
    expect(decision.change.metaInstances![0]!.after.placementError).toBe('no NVLink domain has 3 free gb200 machine(s) together (best: 2)');
  });
});
