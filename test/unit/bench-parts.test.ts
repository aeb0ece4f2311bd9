import { describe, expect, it } from 'vitest';
import { parts } from '../../bench/parts/index.ts';
import { placementPart } from '../../bench/parts/placement.ts';
import { scaleBurstPart } from '../../bench/parts/scale-burst.ts';
import { selectParts } from '../../bench/select.ts';

// How a run picks its bench parts (BENCH_ONLY, BENCH_SKIP) and what each part is to the run: no DynamoDB here.

const names = (env: Record<string, string>) => selectParts(parts, env).map((part) => part.name);

describe('bench parts', () => {
  it('have distinct names, summary keys and report sections, and a part that reads others comes after them', () => {
    for (const key of ['name', 'summaryKey', 'section'] as const) {
      const values = parts.map((part) => part[key]).filter((value) => value !== undefined);
      expect(new Set(values).size, key).toBe(values.length);
    }
    for (const [i, part] of parts.entries()) {
      for (const read of part.reads ?? [])
        expect(
          parts.findIndex((p) => p.name === read),
          `${part.name} reads ${read}`,
        ).toBeLessThan(i);
    }
  });

  it('all run by default, in their order; BENCH_ONLY and BENCH_SKIP choose', () => {
    expect(names({})).toEqual(parts.map((part) => part.name));
    expect(names({ BENCH_ONLY: 'sweep, meta' })).toEqual(['meta', 'sweep']);
    expect(names({ BENCH_SKIP: 'api,heartbeat' })).not.toContain('api');
  });

  it('runs a derived part when the parts it reads run, brings them along when named, and leaves it out when one is skipped', () => {
    expect(names({ BENCH_ONLY: 'heartbeat,sweep,workflows' })).toEqual(['heartbeat', 'sweep', 'workflows', 'cost']);
    expect(names({ BENCH_ONLY: 'cost' })).toEqual(['heartbeat', 'sweep', 'workflows', 'cost']);
    expect(names({ BENCH_SKIP: 'workflows' })).not.toContain('cost');
    expect(names({ BENCH_ONLY: 'heartbeat,sweep' })).not.toContain('cost');
  });

  it('refuses a name it does not know, listing those it does', () => {
    expect(() => names({ BENCH_ONLY: 'api,bogus' })).toThrow(/unknown bench part\(s\) bogus; known: api, host, heartbeat/);
    expect(() => names({ BENCH_SKIP: 'nope' })).toThrow(/nope/);
  });

  it('read their options from their own variables, with defaults for what is unset or not a whole number in range', () => {
    expect(placementPart.options({})).toMatchObject({ machines: 10_000, metaInstances: 1_000, passes: 5 });
    expect(placementPart.options({ BENCH_PLACEMENT_MACHINES: '300', BENCH_PLACEMENT_PASSES: '0', BENCH_PLACEMENT_META_INSTANCES: 'x' })).toMatchObject({
      machines: 300,
      metaInstances: 1_000,
      passes: 5,
    });
    // The burst on a site-scale type: 100 free for 400 creates unless told, the sweep as deployed (each minute).
    expect(scaleBurstPart.options({})).toEqual({ machines: 4_000, free: 100, requests: 400, rounds: 1, waiters: 5, sweepIntervalMs: 60_000 });
    expect(scaleBurstPart.options({ BENCH_SCALE_BURST_MACHINES: '200', BENCH_SCALE_BURST_WAITERS: '0' })).toMatchObject({ machines: 200, waiters: 0 });
  });
});
