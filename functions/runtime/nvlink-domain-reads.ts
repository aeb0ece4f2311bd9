import { COUNTER_ITEMS_PER_SHARD, fleetSummary, SUMMARY_SHARDS } from '#domain/machines/fleet-summary.ts';
import type { HeartbeatView } from '#domain/core/health.ts';
import type { Machine } from '#domain/core/model.ts';
import type { DomainRead } from '#domain/reservations/reservations.ts';
import type { AppContext } from '#runtime/context.ts';

/** How many machines of a type each NVLink domain has, as the fleet summary counts them: one batch read of its counter items. */
export async function nvlinkDomainSizes(ctx: AppContext, machineType: string, heartbeat: HeartbeatView): Promise<Record<string, number>> {
  const counterItems = Array.from({ length: SUMMARY_SHARDS * COUNTER_ITEMS_PER_SHARD }, (_, shard) => ({ machineType, shard }));
  const summary = fleetSummary((await ctx.store.getSummaryItems([], counterItems)).shards, heartbeat, ctx.clock.now(), { nvlinkDomains: true });
  const domains = summary.byType[machineType]?.byNvlinkDomain ?? {};
  return Object.fromEntries(Object.entries(domains).map(([domain, tally]) => [domain, tally.machines]));
}

/**
 * Each domain's size and the free machines of the shared pool in it (one Query of `allocatableByDomain` a domain, as
 * it holds no more than the domain's machines): what a reservation of whole domains decides on.
 */
export async function readDomains(ctx: AppContext, machineType: string, domains: readonly string[], sizes: Record<string, number>): Promise<DomainRead[]> {
  return Promise.all(
    domains.map(async (domain) => {
      const size = sizes[domain] ?? 0;
      const free: Machine[] = [];
      let nextToken: string | undefined;
      if (size > 0) {
        do {
          const page = await ctx.store.allocatableMachinesPage(machineType, { nvlinkDomain: domain, limit: size + 1, nextToken });
          free.push(...page.items);
          nextToken = page.nextToken;
        } while (nextToken && free.length <= size);
      }
      return { domain, size, free };
    }),
  );
}
