import { describe, expect, it } from 'vitest';
import { PartResults } from '../../bench/part.ts';
import { summaryPart } from '../../bench/parts/summary.ts';
import { benchContext } from '../support/bench-context.ts';

// The summary part at a small size: it times the summary beside a 50-machine page on one site, and the answers it
// sizes are the routes' own: the plain summary carries no domain, the opt-in one every domain of the gb200 racks.

describe('bench summary part at 72 machines', () => {
  it("sets the summary's read beside a machine page's, and sizes both answers", async () => {
    const options = summaryPart.options({ BENCH_SUMMARY_MACHINES: '72', BENCH_SUMMARY_SAMPLES: '3', BENCH_SUMMARY_WARMUP: '1' });
    const result = await summaryPart.run(benchContext(), options);
    expect(result.summary.latency.samples).toBe(3);
    expect(result.machine_page.latency.samples).toBe(3);
    expect(result.ratio_to_machine_page).toBeCloseTo(result.summary.latency.median / result.machine_page.latency.median, 2);
    // 36 gb200 machines in racks of 18: two domains, which only the opt-in answer names.
    expect(result.summary_with_domains.bytes).toBeGreaterThan(result.summary.bytes);
    expect(result.machine_page.bytes).toBeGreaterThan(result.summary.bytes);
    expect(summaryPart.summarize(result, new PartResults())).toMatchObject({
      machines: 72,
      ratio_to_machine_page: result.ratio_to_machine_page,
      goal_ratio: 2,
      meets_goal: result.ratio_to_machine_page <= 2,
    });
  }, 180_000);
});
