import { LATEST_DATA_VERSION } from '#store/data-version.ts';

/**
 * Every data migration, in order: each brings the table to the data version of its id. Numbered, idempotent and
 * resumable; `site` ones touch a bounded set of the site's own items, `scan` ones walk the whole table in parallel
 * Scan segments with a checkpoint each (runner.ts). An `expand` migration leaves what the release before reads; a
 * `contract` one removes it, no sooner than `[migrations] contract_after_minutes` after the expand before it, when
 * no invocation of that release can still be running.
 */
export interface Migration {
  id: number;
  name: string;
  /** The release that brought it. */
  release: string;
  kind: 'expand' | 'contract';
  walk: 'site' | 'scan';
  /** Runs before the deploy is declared done: it leaves nothing the release before cannot read. */
  whilePinned?: true;
  summary: string;
}

export const migrations: readonly Migration[] = [
  {
    id: 1,
    name: 'site-items-own-keys',
    release: '0.2.0',
    kind: 'expand',
    walk: 'site',
    whilePinned: true,
    summary: "copies the site's catalog, heartbeat, roster digests and safety state from pk SITE to a key each",
  },
  {
    id: 2,
    name: 'records-in-0.2.0-layout',
    release: '0.2.0',
    kind: 'expand',
    walk: 'scan',
    summary:
      "re-derives every record's index attributes (machines by rack, the pool by type and rack, due shards, listing shards), " +
      "counts live instances in their org's quota usage and gives each meta-instance its memberIds",
  },
  {
    id: 3,
    name: 'drop-0.1.0-layout',
    release: '0.2.0',
    kind: 'contract',
    walk: 'scan',
    summary:
      "moves whatever 0.1.0 wrote during the deploy, removes finished members' memberOf and 0.1.0's site and summary items; " +
      "then no listing reads 0.1.0's partitions",
  },
  {
    id: 4,
    name: 'quotas-dealt-over-usage-shards',
    release: '0.3.0',
    kind: 'expand',
    walk: 'scan',
    summary:
      "deals every quota that usage shard 0 holds whole over the org's usage shards, so that the org's concurrent creates " + 'no longer all count in one item',
  },
];

if (migrations.at(-1)?.id !== LATEST_DATA_VERSION || migrations.some((m, at) => m.id !== at + 1)) {
  throw new Error('migrations are numbered 1, 2, … and the last is LATEST_DATA_VERSION');
}

export const migrationOf = (id: number): Migration | undefined => migrations.find((migration) => migration.id === id);
