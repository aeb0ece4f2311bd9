import { shardOf, summaryChange, summaryRemoval, type RackAggregate, type SummaryShard } from '#domain/fleet-summary.ts';
import type { Machine } from '#domain/model.ts';
import type { AppContext } from '#services/context.ts';
import { defineReconciler } from './reconciler.ts';

// Keeps the fleet summary's aggregates (domain/fleet-summary.ts) in step with the machine records. An id is a
// machine id (bring its entry up to date), or, when a machine was re-described to another type or rack, a
// `placement` naming the rack it left (take its entry out there).

export interface FleetSummarySnapshot {
  machineId: string;
  machine: Machine | null;
  /** The rack item the decision concerns: the machine's own, or the one it left. */
  rack: RackAggregate | null;
  shard: SummaryShard | null;
  leaving: boolean;
}

interface Placement {
  machineId: string;
  machineType: string;
  rack: string;
}

const leftPlacement = (placement: Placement): string => JSON.stringify([placement.machineId, placement.machineType, placement.rack]);

function parsePlacement(id: string): Placement | null {
  if (!id.startsWith('[')) return null;
  const [machineId, machineType, rack] = JSON.parse(id) as [string, string, string];
  return { machineId, machineType, rack };
}

const moved = (before: Machine | null, after: Machine | null): boolean =>
  before !== null && after !== null && (before.machineType !== after.machineType || before.rack !== after.rack);

export const fleetSummaryReconciler = defineReconciler({
  kind: 'fleet-summary',
  settlesOrFails: true,
  watches: {
    machine: {
      concerns: (before, after, id) => [id, moved(before, after) ? leftPlacement({ machineId: id, machineType: before!.machineType, rack: before!.rack }) : null],
    },
  },

  async load(ctx: AppContext, id: string): Promise<FleetSummarySnapshot | null> {
    const left = parsePlacement(id);
    const machineId = left?.machineId ?? id;
    const machine = await ctx.store.getMachine(machineId);
    const where = left ?? machine;
    if (!where) return null;
    const [rack, shard] = await Promise.all([ctx.store.getRackAggregate(where.machineType, where.rack), ctx.store.getSummaryShard(where.machineType, shardOf(where.rack))]);
    return { machineId, machine, rack, shard, leaving: left !== null };
  },

  /** A lost race (another machine of the same shard) looks again at once: nothing else would bring this one back. */
  decide({ machineId, machine, rack, shard, leaving }: FleetSummarySnapshot) {
    const change = leaving ? summaryRemoval(rack, shard, machineId, machine) : machine && summaryChange({ machine, rack, shard });
    return change ? { change, requeueAt: new Date(0) } : {};
  },
});
