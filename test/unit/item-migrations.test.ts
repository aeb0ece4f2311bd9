import { describe, expect, it } from 'vitest';
import { dueTimes } from '#reconcilers/due-times.ts';
import { instanceItem } from '#store/aggregates/instance-items.ts';
import { LATEST_DATA_VERSION, pinnedOf } from '#store/data-version.ts';
import { keys } from '#store/keys.ts';
import { machineItem } from '#store/aggregates/machine-items.ts';
import { metaInstanceItem } from '#store/aggregates/meta-instance-items.ts';
import { inLegacyLayout } from '#store/legacy-layout.ts';
import { migrateItem, type MigrationInput } from '#store/migrations/item-migrations.ts';
import { aMachine, aMetaInstance, anInstance } from '#test/support/fixtures.ts';

// What migrations 2 (expand) and 3 (contract) do to one item, on items in release 0.1.0's layout as the current code
// writes them while the table is pinned (legacy-layout.ts): both must agree, or a pinned site would lose records.

const input = (members: Record<string, string[]> = {}): MigrationInput => ({ due: dueTimes, membersOf: async (id) => members[id] ?? [] });
const legacy = (item: Record<string, unknown>) => {
  const { quotaCounted: _counted, memberIds: _members, ...rest } = inLegacyLayout(item);
  return rest;
};

describe('a migration of one item', () => {
  it("moves a 0.1.0 machine to its rack's partitions, guarded by its version, and then leaves it alone", async () => {
    const machine = aMachine({ id: 'gb200-r1-01', machineType: 'gb200', rack: 'rack-1', version: 4 });
    const old = legacy(machineItem(machine, undefined));
    expect(old).toMatchObject({ kind: 'MACHINE', allocPk: 'ALLOC#gb200', allocSk: 'rack-1#gb200-r1-01' });
    const migrated = await migrateItem(old, input(), false);
    expect(migrated).toMatchObject({ expectedVersion: 4, put: { kind: 'MACHINE#rack-1', allocPk: 'ALLOC#gb200#rack-1', version: 5 } });
    expect(await migrateItem(migrated!.put!, input(), false)).toBeNull();
    expect(await migrateItem(machineItem(machine, undefined), input(), true)).toBeNull();
  });

  it("counts a live instance 0.1.0 wrote in its org's usage, once, and a finished one not at all", async () => {
    const live = legacy(instanceItem(anInstance({ id: 'i-1', org: 'acme', machineType: 'gb200', status: 'Ready', version: 2 }), undefined));
    expect(live).toMatchObject({ orgPk: 'ORG#acme#INSTANCE' });
    const migrated = await migrateItem(live, input(), false);
    expect(migrated?.countUsage).toEqual({ key: keys.quotaUsage('acme', 'gb200'), org: 'acme', machineType: 'gb200' });
    expect(migrated?.put).toMatchObject({ quotaCounted: true, orgPk: expect.stringMatching(/^ORG#acme#INSTANCE#\d\d$/) });
    expect(await migrateItem(migrated!.put!, input(), false)).toBeNull();
    const done = legacy(instanceItem(anInstance({ id: 'i-2', status: 'Terminated', version: 7 }), undefined));
    expect((await migrateItem(done, input(), false))?.countUsage).toBeUndefined();
  });

  it('deals a quota 0.2.0 held whole in one usage item, and leaves shards and counts without a quota alone', async () => {
    const head = { ...keys.quotaUsage('acme', 'gb200'), entity: 'quota-usage', org: 'acme', machineType: 'gb200', used: 2 };
    expect(await migrateItem({ ...head, quota: 3 }, input(), false)).toEqual({ dealQuota: { org: 'acme', machineType: 'gb200' } });
    expect(await migrateItem({ ...head, quota: 1, quotaTotal: 3 }, input(), false)).toBeNull();
    expect(await migrateItem({ ...keys.quotaUsage('acme', 'gb200', 5), entity: 'quota-usage', shard: 5, used: 0, quota: 1 }, input(), false)).toBeNull();
    expect(await migrateItem(head, input(), false)).toBeNull();
  });

  it("gives a meta-instance its members from 0.1.0's members index, which a pinned site keeps on every member", async () => {
    const member = inLegacyLayout(instanceItem(anInstance({ id: 'i-9', metaInstanceId: 'mi-1', status: 'Ready' }), undefined));
    expect(member).toMatchObject({ memberOf: 'META#mi-1', memberSk: 'i-9' });
    const meta = legacy(metaInstanceItem(aMetaInstance({ id: 'mi-1', memberIds: ['stale'], version: 3 }), undefined));
    expect(meta).toMatchObject({ kind: 'META' });
    const migrated = await migrateItem(meta, input({ 'mi-1': ['i-9'] }), false);
    expect(migrated?.put).toMatchObject({ memberIds: ['i-9'], kind: expect.stringMatching(/^META#\d\d$/), version: 4 });
  });

  it("contracts: removes 0.1.0's site and summary items and a finished member's binding, and keeps a live one's", async () => {
    expect(await migrateItem({ pk: 'SITE', sk: 'CATALOG', types: {} }, input(), true)).toEqual({ remove: { pk: 'SITE', sk: 'CATALOG' } });
    expect(await migrateItem({ pk: 'SUMMARY', sk: 'gb200#00' }, input(), true)).toEqual({ remove: { pk: 'SUMMARY', sk: 'gb200#00' } });
    expect(await migrateItem({ pk: 'SITE', sk: 'CATALOG', types: {} }, input(), false)).toBeNull();
    const member = (status: 'Ready' | 'Terminated') => ({
      ...instanceItem(anInstance({ id: 'i-3', metaInstanceId: 'mi-1', status, version: 1 }), undefined),
      memberOf: 'META#mi-1',
      memberSk: 'i-3',
    });
    expect(await migrateItem(member('Ready'), input(), true)).toBeNull();
    const finished = await migrateItem(member('Terminated'), input(), true);
    expect(finished?.put).not.toHaveProperty('memberOf');
  });
});

describe('whether a release finds the table pinned', () => {
  const latest = LATEST_DATA_VERSION;
  it('is pinned on a table with no data version, one pinned, or one behind it whose deploy an earlier release declared', () => {
    expect(pinnedOf(null)).toBe(true);
    expect(pinnedOf({ dataVersion: 0, pinned: true })).toBe(true);
    expect(pinnedOf({ dataVersion: latest - 1, pinned: false })).toBe(true);
    expect(pinnedOf({ dataVersion: latest - 1, pinned: false, declaredFor: latest - 1 })).toBe(true);
  });

  it('is not pinned once its own deploy is declared, nor on a table at its latest data version', () => {
    expect(pinnedOf({ dataVersion: latest - 1, pinned: false, declaredFor: latest })).toBe(false);
    expect(pinnedOf({ dataVersion: latest, pinned: false })).toBe(false);
  });
});
