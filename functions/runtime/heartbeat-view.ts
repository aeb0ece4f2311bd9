import type { HeartbeatView } from '#domain/core/health.ts';
import type { SiteHeartbeat } from '#domain/machines/heartbeat.ts';
import { heartbeatTimeoutMs, type AppContext } from '#runtime/context.ts';

export async function loadHeartbeatView(ctx: AppContext): Promise<HeartbeatView> {
  return heartbeatViewOf(ctx, await ctx.store.getSiteHeartbeat());
}

/** The view of a site heartbeat already read (with other records, through `getRecords`). */
export function heartbeatViewOf(ctx: AppContext, stored: SiteHeartbeat | null): HeartbeatView {
  return { ...(stored ? { rosterSeenAt: stored.rosterSeenAt } : {}), timeoutMs: heartbeatTimeoutMs(ctx.config) };
}
