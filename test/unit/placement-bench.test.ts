import { describe, expect, it } from 'vitest';
import { defaultPlacementOptions, placementBench } from '../../bench/placement.ts';

// The placement bench once, unmeasured (one pass, no warm-up): on the fleet of part-used racks, placement as the
// service loads its candidates reports no placement error while the fleet has room, where reading only the first
// page of free machines does. Its timing is judged by `npm run bench`, not here.

describe('placement bench, one pass', () => {
  it('has no false placement errors, where the first page alone has some', async () => {
    const result = await placementBench({ ...defaultPlacementOptions, warmupPasses: 0, passes: 1 });
    expect(result.goals.false_placement_errors).toMatchObject({ figure: 0, meets_goal: true });
    expect(result.candidates_first_page_only.outcomes.false_placement_errors).toBeGreaterThan(0);
    const loaded = result.candidates_as_the_service_loads_them;
    expect(loaded.outcomes.placed).toBeGreaterThan(result.candidates_first_page_only.outcomes.placed);
    // Bounded reads: at most the group's rack and a few pages per decision.
    expect(loaded.reads_per_decision.reads_max).toBeLessThanOrEqual(3);
  }, 120_000);
});
