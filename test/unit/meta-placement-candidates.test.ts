import { describe, expect, it } from 'vitest';
import { homeRack, noReplacements, reconcileMetaInstance, wantsMoreCandidates, type Member, type MetaSnapshot } from '#domain/meta-instances.ts';
import type { Machine, MetaInstance } from '#domain/model.ts';
import { CANDIDATE_PAGE, MAX_CANDIDATE_PAGES, loadCandidates, type CandidateReader } from '#reconcilers/meta-instance.ts';
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

describe('homeRack', () => {
  it('is the one rack a same-rack group is bound to by its members or pinned machines', () => {
    expect(homeRack(snapshot({ minNodes: 2, placement: { sameRack: true } }, [memberOn(free('a', 'r7'))]))).toBe('r7');
    expect(homeRack(snapshot({ minNodes: 2, placement: { sameRack: true }, machineIds: ['p'] }, [], [free('p', 'r3')]))).toBe('r3');
    expect(homeRack(snapshot({ minNodes: 2, placement: { sameRack: false } }, [memberOn(free('a', 'r7'))]))).toBeUndefined();
    expect(homeRack(snapshot({ minNodes: 3, placement: { sameRack: true } }, [memberOn(free('a', 'r7')), memberOn(free('b', 'r8'))]))).toBeUndefined();
    expect(homeRack(snapshot({ minNodes: 2, placement: { sameRack: true } }))).toBeUndefined();
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
