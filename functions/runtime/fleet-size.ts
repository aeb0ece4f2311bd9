import type { AppContext } from '#runtime/context.ts';

/** The machines the site has, as the breaker's fraction counts them. */
export async function loadFleetSize(ctx: AppContext): Promise<number> {
  const catalog = await ctx.store.getCatalog();
  return Object.values(catalog.types).reduce((sum, t) => sum + t.count, 0);
}
