import type { Instance } from '#domain/core/model.ts';
import { instanceView } from '#domain/meta-instances/views.ts';
import type { AppContext } from '#runtime/context.ts';

/** Instances as the tenant sees them, health included: the machines under them read in one batch (a page at most). */
export async function instanceViews(ctx: AppContext, instances: Instance[]) {
  const machineIds = [...new Set(instances.map((i) => i.machineId))];
  const machines = machineIds.length > 0 ? await ctx.store.getMachines(machineIds) : new Map();
  return instances.map((i) => instanceView(i, machines.get(i.machineId) ?? null));
}

export async function instanceWithHealth(ctx: AppContext, instance: Instance) {
  return (await instanceViews(ctx, [instance]))[0]!;
}
