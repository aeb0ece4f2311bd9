import type { AppContext } from '#runtime/context.ts';

/** The deploy of this release is done: the table leaves the layout of the release before, and the migrations start. */
export async function startMigrations(ctx: AppContext) {
  const status = await ctx.store.startMigrations();
  ctx.log.info('data migrations started: the deploy is declared done', { dataVersion: status.dataVersion, latest: status.latest });
  return status.items;
}

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
    pinned: status.pinned,
  };
}
