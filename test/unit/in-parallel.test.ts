import { describe, expect, it } from 'vitest';
import { chunksOf, inParallel } from '#store/in-parallel.ts';

const tick = () => new Promise((resolve) => setTimeout(resolve, 1));

describe('chunksOf', () => {
  it('slices in order, the last slice holding the rest', () => {
    expect(chunksOf([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
    expect(chunksOf([], 25)).toEqual([]);
  });
});

describe('inParallel', () => {
  it('runs every item once, never more than the limit at a time', async () => {
    let running = 0;
    let most = 0;
    const seen: number[] = [];
    await inParallel([...Array(20).keys()], 3, async (n) => {
      running++;
      most = Math.max(most, running);
      await tick();
      seen.push(n);
      running--;
    });
    expect(seen.sort((a, b) => a - b)).toEqual([...Array(20).keys()]);
    expect(most).toBe(3);
  });

  it('throws the first failure only once the tasks in flight have settled', async () => {
    const settled: number[] = [];
    const run = inParallel([0, 1, 2, 3], 4, async (n) => {
      if (n === 0) throw new Error('first');
      await tick();
      settled.push(n);
    });
    await expect(run).rejects.toThrow('first');
    expect(settled.sort()).toEqual([1, 2, 3]);
  });
});
