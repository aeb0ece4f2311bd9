import type { DynamoDBRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import {
  arrangeFetched,
  createStreamChaos,
  parseStreamChaos,
  seededRandom,
  shuffleAcrossEntities,
  StreamChaosConfigError,
  type ChaosMode,
} from '#local/stream-chaos.ts';

/** `a1` is entity a's first change; the sequence number keeps records apart. */
const record = (name: string): DynamoDBRecord => ({
  eventName: 'MODIFY',
  dynamodb: { Keys: { pk: { S: name[0]! } }, SequenceNumber: name },
});
const names = (records: DynamoDBRecord[]) => records.map((r) => r.dynamodb!.SequenceNumber!);
const batch = ['a1', 'b1', 'a2', 'c1', 'b2', 'a3', 'c2', 'd1'].map(record);
const modes = (...list: ChaosMode[]) => new Set(list);

describe('FLEETWARD_STREAM_CHAOS', () => {
  it('is off when unset or blank', () => {
    expect(parseStreamChaos({})).toBeUndefined();
    expect(parseStreamChaos({ FLEETWARD_STREAM_CHAOS: ' , ' })).toBeUndefined();
  });

  it('takes any subset, comma-separated, and picks a seed when none is given', () => {
    expect(parseStreamChaos({ FLEETWARD_STREAM_CHAOS: 'delay, duplicate' }, () => 42)).toEqual({ modes: ['delay', 'duplicate'], seed: 42 });
    expect(parseStreamChaos({ FLEETWARD_STREAM_CHAOS: 'reorder', FLEETWARD_STREAM_CHAOS_SEED: '7' })).toEqual({ modes: ['reorder'], seed: 7 });
  });

  it('stops on a word it does not know, naming it and the valid ones', () => {
    expect(() => parseStreamChaos({ FLEETWARD_STREAM_CHAOS: 'duplicate,shuffle' })).toThrow(StreamChaosConfigError);
    expect(() => parseStreamChaos({ FLEETWARD_STREAM_CHAOS: 'duplicate,shuffle' })).toThrow(
      'FLEETWARD_STREAM_CHAOS: unknown "shuffle"; use any of duplicate, reorder, delay, comma-separated',
    );
  });

  it.each(['x', '-1', '1.5', String(2 ** 32)])('stops on the seed %s', (seed) => {
    expect(() => parseStreamChaos({ FLEETWARD_STREAM_CHAOS: 'delay', FLEETWARD_STREAM_CHAOS_SEED: seed })).toThrow(/FLEETWARD_STREAM_CHAOS_SEED/);
  });
});

describe('seeded randomness', () => {
  it('replays the same sequence for the same seed and another for another seed', () => {
    const take = (seed: number) => Array.from({ length: 5 }, seededRandom(seed));
    expect(take(1)).toEqual(take(1));
    expect(take(1)).not.toEqual(take(2));
    expect(take(3).every((n) => n >= 0 && n < 1)).toBe(true);
  });
});

describe('shuffle across entities', () => {
  it("mixes entities but keeps each entity's own records in order", () => {
    const orders = new Set<string>();
    for (let seed = 0; seed < 20; seed++) {
      const shuffled = names(shuffleAcrossEntities(batch, seededRandom(seed)));
      expect([...shuffled].sort()).toEqual(names(batch).sort());
      for (const entity of ['a', 'b', 'c']) {
        const own = shuffled.filter((n) => n.startsWith(entity));
        expect(own).toEqual([...own].sort());
      }
      orders.add(shuffled.join(' '));
    }
    expect(orders.size).toBeGreaterThan(10);
  });
});

describe('arranging fetched records', () => {
  const all = (arrangement: ReturnType<typeof arrangeFetched>) => [...arrangement.inOrder, ...arrangement.held.map((h) => h.record)];

  it('changes nothing without modes', () => {
    expect(arrangeFetched(batch, modes(), seededRandom(1), 0)).toEqual({ inOrder: batch, held: [] });
  });

  it('duplicate: every record once in the shard and once more later, as a copy', () => {
    const arrangement = arrangeFetched(batch, modes('duplicate'), seededRandom(1), 1_000);
    expect(names(arrangement.inOrder)).toEqual(names(batch));
    expect(names(arrangement.held.map((h) => h.record))).toEqual(names(batch));
    expect(arrangement.held[0]!.record).not.toBe(batch[0]);
    for (const held of arrangement.held) {
      expect(held.releaseAt).toBeGreaterThan(1_000);
      expect(held.releaseAt).toBeLessThanOrEqual(1_000 + 500);
    }
  });

  it('delay: holds some records back, out of the shard, and loses none', () => {
    const arrangement = arrangeFetched(batch, modes('delay'), seededRandom(3), 0, { share: 0.5, maxDelayMs: 100 });
    expect(arrangement.held.length).toBeGreaterThan(0);
    expect(arrangement.inOrder.length).toBeLessThan(batch.length);
    expect(names(all(arrangement)).sort()).toEqual(names(batch).sort());
    expect(names(arrangement.inOrder)).toEqual(names(batch).filter((n) => names(arrangement.inOrder).includes(n)));
  });

  it('reorder: moves some records to the shared lane at once and shuffles the rest across entities', () => {
    const arrangement = arrangeFetched(batch, modes('reorder'), seededRandom(5), 10, { share: 0.5, maxDelayMs: 100 });
    expect(arrangement.held.length).toBeGreaterThan(0);
    expect(arrangement.held.every((h) => h.releaseAt === 10)).toBe(true);
    expect(names(all(arrangement)).sort()).toEqual(names(batch).sort());
  });

  it('is the same for the same seed', () => {
    const run = () => arrangeFetched(batch, modes('duplicate', 'reorder', 'delay'), seededRandom(9), 0);
    expect(run()).toEqual(run());
  });
});

describe('the chaos the poller holds', () => {
  it('releases held records when due, and says when the next one is', () => {
    const chaos = createStreamChaos({ modes: ['duplicate'], seed: 4 }, { share: 0.25, maxDelayMs: 100 });
    const kept = chaos.arrange(batch.slice(0, 3), 1_000);
    expect(names(kept)).toEqual(['a1', 'b1', 'a2']);
    expect(chaos.holding()).toBe(3);
    const next = chaos.nextReleaseAt()!;
    expect(next).toBeGreaterThan(1_000);
    expect(chaos.release(next - 1)).toEqual([]);
    const released = [...chaos.release(next), ...chaos.release(1_000 + 101)];
    expect(names(released).sort()).toEqual(['a1', 'a2', 'b1']);
    expect(chaos.holding()).toBe(0);
    expect(chaos.nextReleaseAt()).toBeUndefined();
  });
});
