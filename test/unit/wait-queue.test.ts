import { describe, expect, it } from 'vitest';
import { wakeable } from '#reconcilers/wait-queue.ts';
import { AT, aMetaInstance } from '#test/support/fixtures.ts';

// Which waiting meta-instances a freed machine wakes. Taking the five longest-waiting whatever they waited for let
// five groups that could not use the machines keep a younger pair waiting for the sweep (over 30 s on a site whose
// sweep runs each minute).

describe('wait-queue wakes', () => {
  it('passes over waiters nothing free could place, so that they do not keep younger ones waiting for the sweep', () => {
    // Five groups of 20 in one rack wait ahead of a pair; two machines are free.
    const racks = Array.from({ length: 5 }, (_, i) => aMetaInstance({ id: `mi-rack-${i}`, minNodes: 20, placement: { sameRack: true } }));
    const pair = aMetaInstance({ id: 'mi-pair', minNodes: 2 });
    const backingOff = aMetaInstance({ id: 'mi-backoff', status: 'Retrying', nextAttemptAt: '2099-01-01T00:00:00.000Z' });
    const snapshot = { waiting: [...racks, backingOff, pair], free: 2, reservedFree: new Map<string, number>(), now: new Date(AT), turn: 0 };
    expect(wakeable(snapshot).map((m) => m.id)).toEqual(['mi-pair']);
    // Members it lists already count against its need; an org's reserved machines count for that org only.
    expect(wakeable({ ...snapshot, waiting: [{ ...racks[0]!, memberIds: Array.from({ length: 18 }, (_, i) => `i-${i}`) }] })).toHaveLength(1);
    const globex = { ...racks[0]!, org: 'globex' };
    expect(wakeable({ ...snapshot, waiting: [globex, pair], reservedFree: new Map([['acme', 18]]) }).map((m) => m.id)).toEqual(['mi-pair']);
    expect(wakeable({ ...snapshot, waiting: [globex, pair], reservedFree: new Map([['globex', 18]]) }).map((m) => m.id)).toEqual(['mi-rack-0', 'mi-pair']);
    expect(wakeable({ ...snapshot, free: 0 }).map((m) => m.id)).toEqual([]);
  });

  it('starts the longest-waiting two at every wake and goes round the others, so a waiter behind five that cannot use the machines is woken', () => {
    // Forty machines free, none of the racks whole: the groups of 20 pass the count and are woken, uselessly.
    const racks = Array.from({ length: 5 }, (_, i) => aMetaInstance({ id: `mi-rack-${i}`, minNodes: 20, placement: { sameRack: true } }));
    const snapshot = {
      waiting: [...racks, aMetaInstance({ id: 'mi-pair', minNodes: 2 })],
      free: 40,
      reservedFree: new Map<string, number>(),
      now: new Date(AT),
    };
    const ids = (turn: number) => wakeable({ ...snapshot, turn }).map((m) => m.id);
    expect(ids(0)).toEqual(['mi-rack-0', 'mi-rack-1', 'mi-rack-2', 'mi-rack-3', 'mi-rack-4']);
    expect(ids(1)).toEqual(['mi-rack-0', 'mi-rack-1', 'mi-pair', 'mi-rack-2', 'mi-rack-3']);
  });
});
