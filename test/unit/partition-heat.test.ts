import { describe, expect, it } from 'vitest';
import { addWrites, heatReport, partitionWrites, type Heat } from '#bench/partition-heat.ts';
import { registerMachine } from '#domain/machines.ts';
import { livenessChange } from '#domain/heartbeat.ts';
import { dueTimes } from '#reconcilers/due-times.ts';
import { duePartitionOf, keys, machineItem } from '#store/items.ts';
import { T0 } from '#test/support/fixtures.ts';

const registered = registerMachine(null, { id: 'm-1', machineType: 'gb200', rack: 'r1' }, 'ops', T0)!.machines![0]!.after;
const registeredItem = machineItem(registered, dueTimes.machine(registered));
const liveItem = machineItem(livenessChange(registered, true, undefined, T0)!, undefined);

const byKey = (writes: Array<{ key: string; units: number }>) => {
  const sums: Record<string, number> = {};
  for (const { key, units } of writes) sums[key] = (sums[key] ?? 0) + units;
  return sums;
};

describe('partition heat: the write units of an item change, per partition key', () => {
  it('a new machine writes its table key and every keys-only index it enters, one unit each', () => {
    expect(byKey(partitionWrites(null, registeredItem))).toEqual({ 'table:MACHINE#m-1': 1, 'byKind:MACHINE#r1': 1, 'allocatable:ALLOC#gb200#r1': 1 });
  });

  it("a machine's liveness flipping writes its table key alone: the keys-only indexes keep their entries", () => {
    expect(byKey(partitionWrites(registeredItem, liveItem))).toEqual({ 'table:MACHINE#m-1': 1 });
  });

  it('a due time moved is the old entry deleted and the new one written, each in the due shard of its entry', () => {
    const due = (at: string) => ({ ...liveItem, duePk: duePartitionOf(keys.machine('m-1').pk, at), dueAt: at });
    const [first, second] = [due('2026-01-01T00:00:00.000Z'), due('2026-01-01T00:01:00.000Z')];
    expect(first.duePk).not.toBe(second.duePk);
    expect(byKey(partitionWrites(first, second))).toEqual({ 'table:MACHINE#m-1': 1, [`due:${first.duePk}`]: 1, [`due:${second.duePk}`]: 1 });
    // Left alone, a keys-only entry costs nothing when the rest of the item changes.
    expect(byKey(partitionWrites(first, { ...first, note: 'x' }))).toEqual({ 'table:MACHINE#m-1': 1 });
  });

  it('an item over a KB costs a unit per started KB, in the table and in every ALL index it is in', () => {
    const big = { pk: 'INSTANCE#i-1', sk: '#INSTANCE', orgPk: 'ORG#acme#INSTANCE', orgSk: 't#i-1', blob: 'x'.repeat(2_500) };
    expect(byKey(partitionWrites(big, { ...big, blob: 'y'.repeat(2_500) }))).toEqual({ 'table:INSTANCE#i-1': 3, 'byOrg:ORG#acme#INSTANCE': 3 });
    expect(byKey(partitionWrites(big, null))).toEqual({ 'table:INSTANCE#i-1': 3, 'byOrg:ORG#acme#INSTANCE': 3 });
  });
});

describe('partition heat report', () => {
  it('takes each key at its hottest second, and models shared keys at 100,000 machines by the growth of the fleet', () => {
    const heat: Heat = new Map();
    // 1,000 machines: each machine key once; the summary's one key written 40 times in one second, 10 in another.
    for (let n = 0; n < 1_000; n++) addWrites(heat, 100, [{ key: `table:MACHINE#m-${n}`, units: 2 }]);
    addWrites(
      heat,
      100,
      Array.from({ length: 40 }, () => ({ key: 'table:SUMMARY', units: 1 })),
    );
    addWrites(
      heat,
      101,
      Array.from({ length: 10 }, () => ({ key: 'table:SUMMARY', units: 1 })),
    );
    const report = heatReport(heat, 1_000);
    expect(report.max_wcu_per_s).toBe(40);
    expect(report.hottest[0]).toEqual({ key: 'table:SUMMARY', wcu_per_s: 40, at: new Date(100_000).toISOString() });
    // The summary key is shared: 100 times the machines, 100 times its rate; a machine's key keeps its own.
    expect(report.modelled_100k_max_wcu_per_s).toBe(4_000);
    expect(report.modelled_100k_hottest[1]).toMatchObject({ key: expect.stringMatching(/^table:MACHINE#/), wcu_per_s: 2 });
    expect(report.meets_goal).toBe(false);
    expect(heatReport(new Map([['table:SUMMARY', new Map([[1, 4]])]]), 1_000).meets_goal).toBe(true);
  });

  it("names each family's hottest key, modelled, though the ten hottest are all of other families", () => {
    const heat: Heat = new Map();
    for (let n = 0; n < 12; n++)
      addWrites(
        heat,
        100,
        Array.from({ length: 9 }, () => ({ key: `table:SUMMARY-RACKS#gb200#${n}`, units: 1 })),
      );
    addWrites(heat, 100, [
      { key: 'due:DUE#07', units: 1 },
      { key: 'due:DUE#07', units: 1 },
      { key: 'due:DUE#99', units: 1 },
    ]);
    addWrites(heat, 101, [{ key: 'table:MACHINE#m-1', units: 1 }]);
    const report = heatReport(heat, 1_000);
    expect(report.modelled_100k_hottest.map((hot) => hot.key)).not.toContain('due:DUE#07');
    expect(report.modelled_100k_hottest_by_family).toEqual([
      { key: expect.stringMatching(/^table:SUMMARY-RACKS#/), wcu_per_s: 900, at: new Date(100_000).toISOString() },
      { key: 'due:DUE#07', wcu_per_s: 200, at: new Date(100_000).toISOString() },
      { key: 'table:MACHINE#m-1', wcu_per_s: 1, at: new Date(101_000).toISOString() },
    ]);
  });

  it('a per-rack key keeps its rate in the model: a fleet a hundred times as large has a hundred times the racks', () => {
    const report = heatReport(new Map([['byKind:MACHINE#r7', new Map([[1, 30]])]]), 1_000);
    expect(report.modelled_100k_max_wcu_per_s).toBe(30);
  });
});
