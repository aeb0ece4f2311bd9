import type { DynamoDBRecord } from 'aws-lambda';
import { randomSeed, switchSeed, switchWords } from './env-switch.ts';

/**
 * `FLEETWARD_STREAM_CHAOS=duplicate,reorder,delay`: the local stream poller misdelivers on purpose, within what
 * Lambda's at-least-once delivery allows and beyond it, so that every reaction is shown to be idempotent and to read
 * fresh state rather than trust the order records come in. Seeded, so a failing run can be replayed.
 *
 * - duplicate: every record is delivered a second time, at a random moment within `maxDelayMs`.
 * - reorder: records of one batch are shuffled across entities (one entity's records keep their order), and a
 *   share of them moves to a lane shared by all shards, where they overtake or trail their neighbours.
 * - delay: a share of records is held back up to `maxDelayMs`, so later changes of the same entity arrive first.
 */

export const chaosModes = ['duplicate', 'reorder', 'delay'] as const;
export type ChaosMode = (typeof chaosModes)[number];

export interface StreamChaosConfig {
  modes: ChaosMode[];
  seed: number;
}

export interface ChaosTuning {
  /** Share of records that `delay` holds back and `reorder` moves to the shared lane. */
  share: number;
  maxDelayMs: number;
}

export const defaultChaosTuning: ChaosTuning = { share: 0.25, maxDelayMs: 500 };

export class StreamChaosConfigError extends Error {
  override name = 'StreamChaosConfigError';
}

/** Undefined when the switch is off; throws StreamChaosConfigError on a word it does not know or a bad seed. */
export function parseStreamChaos(env: Record<string, string | undefined>, pickSeed: () => number = randomSeed): StreamChaosConfig | undefined {
  const words = switchWords(env, 'FLEETWARD_STREAM_CHAOS');
  if (words.length === 0) return undefined;
  const unknown = words.filter((word) => !(chaosModes as readonly string[]).includes(word));
  if (unknown.length > 0) {
    throw new StreamChaosConfigError(
      `FLEETWARD_STREAM_CHAOS: unknown ${unknown.map((w) => `"${w}"`).join(', ')}; use any of ${chaosModes.join(', ')}, comma-separated`,
    );
  }
  const seed = switchSeed(env, 'FLEETWARD_STREAM_CHAOS', pickSeed, (message) => new StreamChaosConfigError(message));
  return { modes: [...new Set(words as ChaosMode[])], seed };
}

/** mulberry32: small, fast and good enough to scramble deliveries; the same seed gives the same sequence. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

const entityOf = (record: DynamoDBRecord) => JSON.stringify(record.dynamodb?.Keys ?? {});

/** A random interleaving of the entities' records in which each entity's own records keep their order. */
export function shuffleAcrossEntities(records: readonly DynamoDBRecord[], random: () => number): DynamoDBRecord[] {
  const queues = new Map<string, DynamoDBRecord[]>();
  for (const record of records) {
    const key = entityOf(record);
    queues.set(key, [...(queues.get(key) ?? []), record]);
  }
  const slots = records.map(entityOf);
  for (let i = slots.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [slots[i], slots[j]] = [slots[j]!, slots[i]!];
  }
  return slots.map((key) => queues.get(key)!.shift()!);
}

export interface HeldRecord {
  record: DynamoDBRecord;
  /** Epoch ms from which it goes to the shared lane. */
  releaseAt: number;
}

export interface ChaosArrangement {
  /** What stays in the shard's own lane, in the order to deliver it. */
  inOrder: DynamoDBRecord[];
  /** Copies and moved records for the lane shared by all shards. */
  held: HeldRecord[];
}

/** How the chaos redistributes records just read from a shard. */
export function arrangeFetched(
  records: readonly DynamoDBRecord[],
  modes: ReadonlySet<ChaosMode>,
  random: () => number,
  now: number,
  tuning: ChaosTuning = defaultChaosTuning,
): ChaosArrangement {
  const inOrder: DynamoDBRecord[] = [];
  const held: HeldRecord[] = [];
  const later = () => now + 1 + Math.floor(random() * tuning.maxDelayMs);
  for (const record of records) {
    if (modes.has('delay') && random() < tuning.share) held.push({ record, releaseAt: later() });
    else if (modes.has('reorder') && random() < tuning.share) held.push({ record, releaseAt: now });
    else inOrder.push(record);
    if (modes.has('duplicate')) held.push({ record: structuredClone(record), releaseAt: later() });
  }
  return { inOrder: modes.has('reorder') ? shuffleAcrossEntities(inOrder, random) : inOrder, held };
}

export interface StreamChaos {
  readonly config: StreamChaosConfig;
  /** Takes a shard's fresh records; returns the ones that stay in the shard's lane. */
  arrange(records: readonly DynamoDBRecord[], now: number): DynamoDBRecord[];
  /** Held records that are due, for the shared lane. */
  release(now: number): DynamoDBRecord[];
  /** How many records are still held back. */
  holding(): number;
  /** Epoch ms of the next release, if any is held. */
  nextReleaseAt(): number | undefined;
}

export function createStreamChaos(config: StreamChaosConfig, tuning: ChaosTuning = defaultChaosTuning): StreamChaos {
  const random = seededRandom(config.seed);
  const modes = new Set(config.modes);
  let held: HeldRecord[] = [];
  return {
    config,
    arrange(records, now) {
      const arrangement = arrangeFetched(records, modes, random, now, tuning);
      held.push(...arrangement.held);
      return arrangement.inOrder;
    },
    release(now) {
      const due = held.filter((h) => h.releaseAt <= now).map((h) => h.record);
      held = held.filter((h) => h.releaseAt > now);
      return modes.has('reorder') ? shuffleAcrossEntities(due, random) : due;
    },
    holding: () => held.length,
    nextReleaseAt: () => (held.length === 0 ? undefined : Math.min(...held.map((h) => h.releaseAt))),
  };
}
