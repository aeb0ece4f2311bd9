/**
 * Every data migration, in order: each brings the table to the data version of its id (what each does is in
 * summaries.ts, for the upgrade plan: the functions carry none of that prose). Numbered, idempotent and
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
}

export const migrations: readonly Migration[] = [
  {
    id: 1,
    name: 'site-items-own-keys',
    release: '0.2.0',
    kind: 'expand',
    walk: 'site',
    whilePinned: true,
  },
  {
    id: 2,
    name: 'records-in-0.2.0-layout',
    release: '0.2.0',
    kind: 'expand',
    walk: 'scan',
  },
  {
    id: 3,
    name: 'drop-0.1.0-layout',
    release: '0.2.0',
    kind: 'contract',
    walk: 'scan',
  },
  {
    id: 4,
    name: 'quotas-dealt-over-usage-shards',
    release: '0.3.0',
    kind: 'expand',
    walk: 'scan',
  },
];

export const migrationOf = (id: number): Migration | undefined => migrations.find((migration) => migration.id === id);
