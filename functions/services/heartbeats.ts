import { livenessChange, planHeartbeat, rosterDigest } from '#domain/heartbeat.ts';
import { iso } from '#domain/time.ts';
import { StaleWriteError } from '#store/fleet-store.ts';
import { heartbeatTimeoutMs, type AppContext } from './context.ts';
import { retryOnStale } from './retry-on-stale.ts';

const PAGE = 500;

/**
 * The site agent's beat with its whole roster. Usually costs one read and, every timeout/3, one small write;
 * only a roster that changed walks the machines, writing just those whose liveness changed.
 */
export async function receiveHeartbeat(ctx: AppContext, machineIds: string[]): Promise<{ stored: boolean; livenessChanges: number }> {
  const now = ctx.clock.now();
  const stored = await ctx.store.getSiteHeartbeat();
  const digest = rosterDigest(machineIds);
  const plan = planHeartbeat(stored, digest, now, heartbeatTimeoutMs(ctx.config));
  if (plan.kind === 'nothing') return { stored: false, livenessChanges: 0 };

  let livenessChanges = 0;
  if (plan.kind === 'reconcile-roster') {
    const roster = new Set(machineIds);
    let nextToken: string | undefined;
    do {
      const page = await ctx.store.listMachines({ limit: PAGE, nextToken });
      for (const listed of page.items) {
        if (listed.heartbeatLive === roster.has(listed.id)) continue;
        await retryOnStale(async () => {
          const machine = await ctx.store.getMachine(listed.id);
          const change = machine && livenessChange(machine, roster.has(machine.id), stored?.rosterSeenAt, now, heartbeatTimeoutMs(ctx.config));
          if (!change) return;
          await ctx.store.commit({ machines: [{ before: machine, after: change.next }], history: [change.history] });
          livenessChanges += 1;
        });
      }
      nextToken = page.nextToken;
    } while (nextToken);
  }
  try {
    await ctx.store.putSiteHeartbeat(stored, { rosterSeenAt: iso(now), digest, machineCount: new Set(machineIds).size });
  } catch (error) {
    // Another beat or a registration wrote it meanwhile; the next beat compares again.
    if (!(error instanceof StaleWriteError)) throw error;
  }
  return { stored: true, livenessChanges };
}
