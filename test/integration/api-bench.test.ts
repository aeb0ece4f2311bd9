import { describe, expect, it } from 'vitest';
import { PartResults } from '../../bench/part.ts';
import { apiPart } from '../../bench/parts/api.ts';
import { benchContext } from '../support/bench-context.ts';

// The api bench part for a few rounds, so that what it measures keeps working between full runs (npm run bench):
// the site through its HTTP API, and the contract floor of each operation. Timings are the bench's to judge.

describe('bench api part for a few rounds', () => {
  it('creates and releases through the API and on the contract floor, each round timed and its DynamoDB work counted', async () => {
    const options = apiPart.options({ BENCH_SAMPLES: '3', BENCH_API_WARMUP: '1', BENCH_FLOOR_WARMUP: '1', BENCH_SETTLE_MS: '0' });
    const result = await apiPart.run(benchContext(), options);
    expect(result.config.samples).toMatchObject({ api_rounds: 3, floor_rounds: 3 });
    for (const operation of [result.create, result.release]) {
      for (const side of [operation.api, operation.floor]) expect(side.median).toBeGreaterThan(0);
      // The floor writes what the API writes: the same items, under the same conditions.
      expect(operation.floor_cost.write_units_per_op.value).toBe(operation.api_cost.write_units_per_op.value);
    }
    // The least each operation can do by its contract: a create finds a free machine and claims it, a release reads
    // the instance and ends it, one transaction each.
    expect(result.create.floor_cost.requests_per_op.value).toEqual({ QueryCommand: 1, TransactWriteItemsCommand: 1 });
    expect(result.release.floor_cost.requests_per_op.value).toEqual({ GetItemCommand: 1, TransactWriteItemsCommand: 1 });
    expect(apiPart.summarize(result, new PartResults())).toMatchObject({ create: result.ratios.create_median, release: result.ratios.release_median });
  }, 120_000);
});
