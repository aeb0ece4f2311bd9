import { describe, expect, it } from 'vitest';
import { addWrites, heatReport, hottestFamiliesFirst, partitionWrites, type Heat } from '#bench/partition-heat.ts';
import { registerMachine } from '#domain/machines/machines.ts';
import { livenessChange } from '#domain/machines/heartbeat.ts';
import { dueTimes } from '#reconcilers/due-times.ts';
import { duePartitionOf } from '#store/aggregates/due.ts';
import { keys } from '#store/keys.ts';
import { machineItem } from '#store/aggregates/machine-items.ts';
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
    // The due index projects the whole item (store/table.ts says why, until a release of its own makes it keys-only):
    // its entry is written again when the rest of the item changes.
    expect(byKey(partitionWrites(first, { ...first, note: 'x' }))).toEqual({ 'table:MACHINE#m-1': 1, [`due:${first.duePk}`]: 1 });
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

  it('a per-rack key keeps its rate in the model: a fleet a hundred times as large has a hundred times the racks', () => {
    const report = heatReport(new Map([['byKind:MACHINE#r7', new Map([[1, 30]])]]), 1_000);
    expect(report.modelled_100k_max_wcu_per_s).toBe(30);
    // A summary rack aggregate has a key per rack; the summary's counter items are 64 a type, whatever the fleet.
    const summary = heatReport(
      new Map([
        ['table:SUMMARY-RACK#gb200#r7', new Map([[1, 30]])],
        ['table:SUMMARY#gb200#07', new Map([[1, 2]])],
      ]),
      1_000,
    );
    expect(summary.modelled_100k_hottest).toEqual([
      { key: 'table:SUMMARY#gb200#07', wcu_per_s: 200, at: new Date(1_000).toISOString() },
      { key: 'table:SUMMARY-RACK#gb200#r7', wcu_per_s: 30, at: new Date(1_000).toISOString() },
    ]);
    expect(summary.families).toEqual([
      { family: 'table:SUMMARY', key: 'table:SUMMARY#gb200#07', wcu_per_s: 2, modelled_100k_wcu_per_s: 200 },
      { family: 'table:SUMMARY-RACK', key: 'table:SUMMARY-RACK#gb200#r7', wcu_per_s: 30, modelled_100k_wcu_per_s: 30 },
    ]);
  });

  it("an audit target naming one record keeps its rate; the site-wide ones, and the site's one stale check, do not", () => {
    const report = heatReport(
      new Map([
        ['table:AUDIT#machines/m-7', new Map([[1, 3]])],
        ['table:AUDIT#machines', new Map([[1, 2]])],
        ['table:AUDIT#safety/repair-storm', new Map([[1, 1]])],
        ['table:STALE-CHECK#site', new Map([[1, 1]])],
      ]),
      1_000,
    );
    expect(Object.fromEntries(report.modelled_100k_hottest.map((hot) => [hot.key, hot.wcu_per_s]))).toEqual({
      'table:AUDIT#machines/m-7': 3,
      'table:AUDIT#machines': 200,
      'table:AUDIT#safety/repair-storm': 100,
      'table:STALE-CHECK#site': 100,
    });
  });

  it("lists each family's hottest key, the hottest modelled first, of several parts' readings too", () => {
    const report = heatReport(
      new Map([
        ['due:DUE#01', new Map([[1, 3]])],
        ['due:DUE#02', new Map([[1, 5]])],
        ['byKind:MACHINE#r1', new Map([[1, 40]])],
      ]),
      1_000,
    );
    expect(report.families.map((f) => [f.key, f.modelled_100k_wcu_per_s])).toEqual([
      ['due:DUE#02', 500],
      ['byKind:MACHINE#r1', 40],
    ]);
    const otherPart = { family: 'due:DUE', key: 'due:DUE#09', wcu_per_s: 1, modelled_100k_wcu_per_s: 600 };
    expect(hottestFamiliesFirst([...report.families, otherPart]).map((f) => f.key)).toEqual(['due:DUE#09', 'byKind:MACHINE#r1']);
  });
});
