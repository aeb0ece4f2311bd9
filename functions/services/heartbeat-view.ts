import type { HeartbeatView } from '#domain/health.ts';
import { heartbeatTimeoutMs, type AppContext } from './context.ts';

export async function loadHeartbeatView(ctx: AppContext): Promise<HeartbeatView> {
  const stored = await ctx.store.getSiteHeartbeat();
  return { ...(stored ? { rosterSeenAt: stored.rosterSeenAt } : {}), timeoutMs: heartbeatTimeoutMs(ctx.config) };
}
