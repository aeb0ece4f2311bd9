import { livenessChange, planHeartbeat, REFRESH_DIVISOR, ROSTER_RESET, rosterDigest, type SiteHeartbeat } from '#domain/heartbeat.ts';
import type { Machine } from '#domain/model.ts';
import { addMs, ageMs, iso } from '#domain/time.ts';
import { heartbeatTimeoutMs, type AppContext } from './context.ts';
import { committedOnce, retryOnStale } from './retry-on-stale.ts';

const PAGE = 500;
/** The digest stored while a changed roster is being walked. */
const WALKING = 'walking';
/** Machine writes in flight at once while a changed roster is walked. */
const CONCURRENCY = 16;

/**
 * The site agent's beat with its whole roster. Usually costs one read and, every timeout/3, one small write;
 * only a roster that changed walks the machines, writing just those whose liveness changed.
 */
export async function receiveHeartbeat(ctx: AppContext, machineIds: string[]): Promise<{ stored: boolean; livenessChanges: number }> {
  const now = ctx.clock.now();
  const stored = await ctx.store.getSiteHeartbeat();
  const digest = rosterDigest(machineIds);
  const machineCount = new Set(machineIds).size;
  const plan = planHeartbeat(stored, digest, now, heartbeatTimeoutMs(ctx.config));
  if (plan.kind === 'nothing') return { stored: false, livenessChanges: 0 };
  if (plan.kind === 'refresh') {
    // A lost race means another beat or a registration wrote it meanwhile; the next beat compares again.
    await committedOnce(() => ctx.store.putSiteHeartbeat(stored, { ...stored!, rosterSeenAt: iso(now) }));
    return { stored: true, livenessChanges: 0 };
  }
  return reconcileRoster(ctx, stored, new Set(machineIds), digest, machineCount);
}

/**
 * Bring every machine's liveness in line with a changed roster. One beat claims the walk; while it runs, the roster
 * time keeps being refreshed so that machines that stayed live never look stale, however large the fleet. The new
 * digest is stored only at the end, so a walk cut short by a crash is redone by a later beat once its claim lapses.
 */
async function reconcileRoster(ctx: AppContext, stored: SiteHeartbeat | null, roster: Set<string>, digest: string, machineCount: number) {
  const timeoutMs = heartbeatTimeoutMs(ctx.config);
  const previousRosterSeenAt = stored?.rosterSeenAt;
  // While walking, the stored digest matches no roster; a registration during the walk leaves ROSTER_RESET instead,
  // which the end of the walk keeps so that the next beat walks again.
  const holding = (current: SiteHeartbeat | null) => {
    const now = ctx.clock.now();
    const digest = current !== stored && current?.digest === ROSTER_RESET ? ROSTER_RESET : WALKING;
    return { rosterSeenAt: iso(now), digest, machineCount, reconcilingUntil: iso(addMs(now, timeoutMs)) };
  };
  const claimed = await retryOnStale(() => ctx.store.putSiteHeartbeat(stored, holding(stored)), { attempts: 1, onExhausted: 'skip' });
  if (!claimed) return { stored: false, livenessChanges: 0 };
  let beat: SiteHeartbeat = claimed;
  const keepAlive = async () => {
    if (ageMs(ctx.clock.now(), beat.rosterSeenAt) < timeoutMs / REFRESH_DIVISOR) return;
    beat = await retryOnStale(async () => {
      const current = (await ctx.store.getSiteHeartbeat()) ?? beat;
      return ctx.store.putSiteHeartbeat(current, holding(current));
    });
  };

  let livenessChanges = 0;
  const apply = async (listed: Machine) => {
    let first = true;
    await retryOnStale(async () => {
      // The listed copy serves as the read; only a lost race reloads it.
      const machine = first ? listed : await ctx.store.getMachine(listed.id);
      first = false;
      const change = machine && livenessChange(machine, roster.has(machine.id), previousRosterSeenAt, ctx.clock.now(), timeoutMs);
      if (!change) return;
      await ctx.store.commit({ machines: [{ before: machine, after: change.next }], history: [change.history] });
      livenessChanges += 1;
    });
  };
  let nextToken: string | undefined;
  do {
    const page = await ctx.store.listMachines({ limit: PAGE, nextToken });
    const changed = page.items.filter((m) => m.heartbeatLive !== roster.has(m.id));
    for (let i = 0; i < changed.length; i += CONCURRENCY) {
      await Promise.all(changed.slice(i, i + CONCURRENCY).map(apply));
      await keepAlive();
    }
    nextToken = page.nextToken;
  } while (nextToken);

  await retryOnStale(async () => {
    const current = (await ctx.store.getSiteHeartbeat()) ?? beat;
    // A machine registered during the walk may have been missed: keep its reset so the next beat walks again.
    const done = current.digest === ROSTER_RESET ? ROSTER_RESET : digest;
    await ctx.store.putSiteHeartbeat(current, { rosterSeenAt: iso(ctx.clock.now()), digest: done, machineCount });
  });
  return { stored: true, livenessChanges };
}
