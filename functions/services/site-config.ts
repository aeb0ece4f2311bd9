import { typesWithoutGpuCount } from '#domain/machines/gpu-catalog.ts';
import type { AppContext } from '#runtime/context.ts';

/** The config in force, and what the site holds that it leaves uncounted: one read (the catalog). */
export async function configInForce(ctx: AppContext) {
  return { config: ctx.config, typesWithoutGpuCount: typesWithoutGpuCount(ctx.config, await ctx.store.getCatalog()) };
}
