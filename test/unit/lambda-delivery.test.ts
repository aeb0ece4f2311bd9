import type { DynamoDBRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import {
  emptyLane,
  enqueue,
  firstFailure,
  mayDeliver,
  nextBatch,
  settle,
  withoutExpired,
  type DeliveryPolicy,
  type Invocation,
  type Lane,
} from '#local/lambda-delivery.ts';

const policy: DeliveryPolicy = { batchSize: 4, maxRetries: 2, retryDelayMs: 100 };

const record = (seq: string): DynamoDBRecord => ({ eventName: 'INSERT', dynamodb: { SequenceNumber: seq } });
const seqs = (records: DynamoDBRecord[]) => records.map((r) => r.dynamodb!.SequenceNumber);
const laneOf = (...seq: string[]) => enqueue(emptyLane(policy), seq.map(record));
const ok: Invocation = { kind: 'returned', response: undefined };
const failing = (...seq: string[]): Invocation => ({
  kind: 'returned',
  response: { batchItemFailures: seq.map((itemIdentifier) => ({ itemIdentifier })) },
});
const threw: Invocation = { kind: 'threw', error: 'Error: boom' };

/** Delivers the lane's next batch with `invocation` at time `now`. */
function step(lane: Lane, invocation: Invocation, now = 1_000) {
  return settle(policy, lane, nextBatch(lane).length, invocation, now);
}

describe('lambda delivery: batches', () => {
  it('hands out at most batchSize records from the head, in order', () => {
    const lane = laneOf('1', '2', '3', '4', '5', '6');
    expect(seqs(nextBatch(lane))).toEqual(['1', '2', '3', '4']);
  });

  it('acknowledges a batch that succeeded and moves on to the rest', () => {
    const { lane, acknowledged, outcome } = step(laneOf('1', '2', '3', '4', '5'), ok);
    expect(outcome).toEqual({ kind: 'acknowledged' });
    expect(acknowledged).toBe(4);
    expect(seqs(nextBatch(lane))).toEqual(['5']);
  });

  it('treats an empty batchItemFailures list as success', () => {
    expect(step(laneOf('1'), { kind: 'returned', response: { batchItemFailures: [] } }).outcome.kind).toBe('acknowledged');
  });
});

describe('lambda delivery: partial batch responses', () => {
  it('redelivers from the lowest failed record, acknowledging what came before it', () => {
    const { lane, acknowledged, outcome } = step(laneOf('1', '2', '3', '4'), failing('4', '2'));
    expect(acknowledged).toBe(1);
    expect(outcome).toMatchObject({ kind: 'retry', attempts: 1, record: { dynamodb: { SequenceNumber: '2' } } });
    expect(seqs(nextBatch(lane))).toEqual(['2', '3', '4']);
  });

  it.each([
    ['an unknown identifier', [{ itemIdentifier: '99' }]],
    ['an empty identifier', [{ itemIdentifier: '' }]],
    ['a missing identifier', [{}]],
  ])('fails the whole batch on %s', (_name, batchItemFailures) => {
    const records = ['1', '2', '3'].map(record);
    expect(firstFailure({ batchItemFailures } as never, records)).toBe(0);
  });

  it('finds no failure when the handler returned nothing', () => {
    expect(firstFailure(undefined, [record('1')])).toBe(-1);
  });
});

describe('lambda delivery: retries and setting aside', () => {
  it('backs off exponentially from retryDelayMs and keeps the lane closed meanwhile', () => {
    let lane = laneOf('1', '2');
    const delays: number[] = [];
    for (let attempt = 1; attempt <= 2; attempt++) {
      const settled = step(lane, failing('1'), 1_000);
      if (settled.outcome.kind !== 'retry') throw new Error(`expected a retry, got ${settled.outcome.kind}`);
      delays.push(settled.outcome.delayMs);
      lane = settled.lane;
      expect(lane.notBefore).toBe(1_000 + settled.outcome.delayMs);
      expect(mayDeliver(lane, lane.notBefore - 1)).toBe(false);
      expect(mayDeliver(lane, lane.notBefore)).toBe(true);
    }
    expect(delays).toEqual([100, 200]);
  });

  it('caps the backoff at 30 s', () => {
    const slow: DeliveryPolicy = { batchSize: 1, maxRetries: 20, retryDelayMs: 10_000 };
    let lane = enqueue(emptyLane(slow), [record('1')]);
    let last = 0;
    for (let i = 0; i < 5; i++) {
      const settled = settle(slow, lane, 1, failing('1'), 0);
      lane = settled.lane;
      last = settled.outcome.kind === 'retry' ? settled.outcome.delayMs : -1;
    }
    expect(last).toBe(30_000);
  });

  it('sets a record aside after maxRetries + 1 failed attempts and frees the lane', () => {
    let lane = laneOf('1', '2', '3');
    const outcomes: string[] = [];
    for (let call = 0; call < 3; call++) {
      const settled = step(lane, failing('1'));
      outcomes.push(settled.outcome.kind);
      lane = settled.lane;
    }
    expect(outcomes).toEqual(['retry', 'retry', 'set-aside']);
    expect(lane.notBefore).toBe(0);
    expect(seqs(nextBatch(lane))).toEqual(['2', '3']);
  });

  it('reports the set-aside record with its attempts and the error', () => {
    let lane = laneOf('1');
    let settled = step(lane, threw);
    for (let call = 1; call < 3; call++) {
      lane = settled.lane;
      settled = step(lane, threw);
    }
    expect(settled.outcome).toEqual({ kind: 'set-aside', record: record('1'), attempts: 3, error: 'Error: boom' });
    expect(settled.lane.pending).toEqual([]);
  });

  it('maxRetries 0 sets a failing record aside at once', () => {
    const once: DeliveryPolicy = { ...policy, maxRetries: 0 };
    const settled = settle(once, enqueue(emptyLane(once), [record('1')]), 1, failing('1'), 0);
    expect(settled.outcome.kind).toBe('set-aside');
  });

  it('only charges the failed head: records behind it start from zero attempts', () => {
    const { lane } = step(laneOf('1', '2'), failing('1'));
    expect(lane.pending.map((p) => p.attempts)).toEqual([1, 0]);
  });
});

describe('lambda delivery: bisect on function error', () => {
  it('halves a thrown batch without charging an attempt, down to the record that throws', () => {
    let lane = laneOf('1', '2', '3', '4');
    const first = step(lane, threw);
    expect(first.outcome).toEqual({ kind: 'bisected', limit: 2 });
    expect(first.acknowledged).toBe(0);
    expect(first.lane.pending.every((p) => p.attempts === 0)).toBe(true);
    lane = first.lane;
    expect(seqs(nextBatch(lane))).toEqual(['1', '2']);

    const second = step(lane, threw);
    expect(second.outcome).toEqual({ kind: 'bisected', limit: 1 });
    expect(seqs(nextBatch(second.lane))).toEqual(['1']);

    const single = step(second.lane, threw);
    expect(single.outcome).toMatchObject({ kind: 'retry', attempts: 1, error: 'Error: boom' });
  });

  it('goes back to full batches once a batch succeeds', () => {
    const bisected = step(laneOf('1', '2', '3', '4', '5', '6'), threw).lane;
    const after = step(bisected, ok).lane;
    expect(seqs(nextBatch(after))).toEqual(['3', '4', '5', '6']);
  });
});

describe('lambda delivery: ordering', () => {
  it('never delivers a record before the failing head in front of it', () => {
    const { lane } = step(laneOf('1', '2', '3'), failing('2'));
    expect(seqs(nextBatch(lane))[0]).toBe('2');
  });

  it('keeps a child lane waiting until its parent is finished', () => {
    const child = laneOf('9');
    expect(mayDeliver(child, 0, false)).toBe(false);
    expect(mayDeliver(child, 0, true)).toBe(true);
  });
});

describe('lambda delivery: the mapping switches', () => {
  it('without BisectBatchOnFunctionError, a thrown batch is retried whole and charged to its head', () => {
    const whole: DeliveryPolicy = { ...policy, bisectOnError: false };
    const settled = settle(whole, laneOf('1', '2', '3'), 3, threw, 1_000);
    expect(settled.outcome).toMatchObject({ kind: 'retry', attempts: 1, record: { dynamodb: { SequenceNumber: '1' } } });
    expect(seqs(nextBatch(settled.lane))).toEqual(['1', '2', '3']);
  });

  it('takes records older than MaximumRecordAgeInSeconds out of the lane, and keeps the others in order', () => {
    const aged = (seq: string, createdAtSeconds: number): DynamoDBRecord => ({
      ...record(seq),
      dynamodb: { SequenceNumber: seq, ApproximateCreationDateTime: createdAtSeconds },
    });
    const lane = enqueue(emptyLane(policy), [aged('1', 100), aged('2', 200), aged('3', 300)]);
    const now = 361_000;
    expect(withoutExpired(policy, lane, now)).toEqual({ lane, expired: [] });
    const { lane: left, expired } = withoutExpired({ ...policy, maxRecordAgeMs: 200_000 }, lane, now);
    expect(seqs(expired)).toEqual(['1']);
    expect(seqs(nextBatch(left))).toEqual(['2', '3']);
  });
});
