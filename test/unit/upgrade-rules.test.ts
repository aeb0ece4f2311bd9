import { describe, expect, it } from 'vitest';
import type { ReleaseRecord } from '#lib/release-record.ts';
import { releaseRecord } from '#lib/releases.ts';
import { upgradeViolations } from '#lib/upgrade-rules.ts';
import { renderPlan, upgradePlan } from '../../scripts/upgrade-plan.ts';
import { migrations } from '#store/migrations/registry.ts';
import { LATEST_DATA_VERSION } from '#store/data-version.ts';
import { migrationSummaries } from '#store/migrations/summaries.ts';

const release010 = releaseRecord('0.1.0');
const release020 = releaseRecord('0.2.0');
const TABLE = 'TableCD117FA1';
const edited = (record: ReleaseRecord, edit: (copy: ReleaseRecord) => void): ReleaseRecord => {
  const copy = structuredClone(record);
  edit(copy);
  return copy;
};
const rulesOf = (from: ReleaseRecord, to: ReleaseRecord) => upgradeViolations(from, to).map((v) => v.rule);

describe('the upgrade rules', () => {
  it('take release 0.1.0 to 0.2.0 in one stack update: one index created', () => {
    expect(upgradeViolations(release010, release020)).toEqual([]);
  });

  it("refuse the update main had before releases: the members index deleted, allocatableByDomain made, due's projection changed", () => {
    const unreleased = edited(release020, (r) => {
      delete r.tables[TABLE]!.globalSecondaryIndexes.members;
      r.tables[TABLE]!.globalSecondaryIndexes.due!.projection = { type: 'KEYS_ONLY' };
    });
    const [violation, ...others] = upgradeViolations(release010, unreleased);
    expect(others).toEqual([]);
    expect(violation).toMatchObject({ rule: 'one-index-change-per-update', resource: TABLE });
    expect(violation!.detail).toBe('4 index changes in one update: delete due, delete members, create allocatableByDomain, create due');
  });

  it('count a changed index key as a delete and a create', () => {
    const changed = edited(release010, (r) => void (r.tables[TABLE]!.globalSecondaryIndexes.byOrg!.keys.range = 'orgAt'));
    expect(rulesOf(release010, changed)).toEqual(['one-index-change-per-update']);
  });

  it('refuse a key-schema change, a local index, a stream view type change', () => {
    expect(
      rulesOf(
        release010,
        edited(release010, (r) => void (r.tables[TABLE]!.keySchema = { hash: 'pk' })),
      ),
    ).toContain('key-schema');
    const lsi = { keys: { hash: 'pk', range: 'at' }, projection: { type: 'ALL' } };
    expect(
      rulesOf(
        release010,
        edited(release010, (r) => void (r.tables[TABLE]!.localSecondaryIndexes = { byAt: lsi })),
      ),
    ).toEqual(['local-index']);
    expect(
      rulesOf(
        release010,
        edited(release010, (r) => void (r.tables[TABLE]!.streamViewType = 'NEW_IMAGE')),
      ),
    ).toEqual(['stream-view-type']);
    expect(
      rulesOf(
        release010,
        edited(release010, (r) => void (r.tables[TABLE]!.streamViewType = null)),
      ),
    ).toEqual(['stream-view-type']);
  });

  it('refuse replacing, removing or leaving unchecked a retained resource', () => {
    expect(
      rulesOf(
        release010,
        edited(release010, (r) => void (r.retained[TABLE]!.replacing.TableName = 'renamed')),
      ),
    ).toEqual(['retained-replacement']);
    const withOldTable = edited(release010, (r) => void (r.retained.OldTable = { type: 'AWS::DynamoDB::Table', replacing: {} }));
    expect(rulesOf(withOldTable, release010)).toEqual(['retained-removed']);
    // A site without the dashboard has none of its retained buckets and log groups: that is no removal.
    expect(
      rulesOf(
        release010,
        edited(release010, (r) => delete r.retained.DashboardBucketA782FB5B),
      ),
    ).toEqual([]);
    expect(
      rulesOf(
        release010,
        edited(release010, (r) => void (r.retained.Queue = { type: 'AWS::SQS::Queue', replacing: {} })),
      ),
    ).toEqual(['retained-unchecked']);
  });
});

describe('npm run upgrade-plan', () => {
  it('takes a 0.1.0 site to this release in one step: its index change and its migrations, expand before contract', () => {
    const steps = upgradePlan('0.1.0', '0.2.0');
    expect(steps).toHaveLength(1);
    expect(steps[0]).toMatchObject({ from: '0.1.0', to: '0.2.0', tableChanges: [`${TABLE}: create index allocatableByDomain`], refused: [] });
    expect(steps[0]!.migrations.map((m) => m.split(' ').slice(0, 3).join(' '))).toEqual([
      '1 site-items-own-keys (expand):',
      '2 records-in-0.2.0-layout (expand):',
      '3 drop-0.1.0-layout (contract):',
    ]);
    expect(renderPlan('0.1.0', steps)).toContain('set [site] deployed_release = "0.1.0"');
    expect(upgradePlan('0.2.0', '0.2.0')).toEqual([]);
    const from020 = upgradePlan('0.2.0', '0.3.0');
    expect(from020).toMatchObject([{ from: '0.2.0', to: '0.3.0', tableChanges: [], refused: [] }]);
    expect(from020[0]!.migrations).toEqual([`4 quotas-dealt-over-usage-shards (expand): ${migrationSummaries[4]}`]);
  });

  it('numbers the migrations 1, 2, … up to the latest data version', () => {
    expect(migrations.map((m) => m.id)).toEqual(Array.from({ length: LATEST_DATA_VERSION }, (_, i) => i + 1));
  });

  it('has a summary for every migration, as the upgrade plan prints it', () => {
    expect(migrations.filter((m) => !migrationSummaries[m.id]).map((m) => m.name)).toEqual([]);
  });
});
