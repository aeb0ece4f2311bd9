import type { AppContext } from '#runtime/context.ts';

/** The data migrations' progress, as the table holds it: one read of the data version and one Query per migration. */
export async function listMigrations(ctx: AppContext) {
  const status = await ctx.store.migrationStatus();
  return status.items;
}

/** The data version the table holds, the one this release brings it to, and how many migrations are pending or running. */
export async function releaseInForce(ctx: AppContext) {
  const status = await ctx.store.migrationStatus();
  const count = (state: string) => status.items.filter((item) => item.state === state).length;
  return {
    dataVersion: status.dataVersion,
    latestDataVersion: status.latest,
    migrations: { pending: count('pending') + count('failed'), running: count('running') },
  };
}
