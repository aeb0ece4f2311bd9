import type { DynamoFleetStore } from '#store/dynamo-store.ts';

// What the local runner says and does on a table an earlier release wrote (docs/deploy.md, "Upgrading a site").

/** A table an earlier release wrote is said to be so, with what its migrations will do while the site serves. */
export async function sayDataVersion(store: DynamoFleetStore, say: (line: string) => void): Promise<void> {
  const status = await store.migrationStatus();
  if (status.dataVersion >= status.latest) return;
  const pending = status.items.filter((item) => item.state !== 'done').map((item) => `${item.id} ${item.name}`);
  say(
    `the table holds data version ${status.dataVersion} of ${status.latest}: migrations ${pending.join(', ')} ` +
      'run in the background while the site serves (GET /admin/migrations)',
  );
}

/** The local site is up: as a finished deploy, it takes the table out of the earlier release's layout. */
export async function declareDeployed(store: DynamoFleetStore, say: (line: string) => void): Promise<void> {
  const status = await store.startMigrations();
  if (status.dataVersion < status.latest) say('data migrations start with the next sweep: `fleetward admin migrations --watch` follows them');
}
