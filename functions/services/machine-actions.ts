import { addOverride, editMachineLabels, removeOverride, type LabelPatch } from '#domain/machine-edits.ts';
import type { HealthOverride, Principal } from '#domain/model.ts';
import type { OverrideRequest } from '#domain/overrides.ts';
import { forbidden, notFound } from '#domain/rejection.ts';
import type { AppContext } from './context.ts';
import { hasCapability, requireMachine } from './instances.ts';
import { showMachine } from './machines.ts';
import { retryOnStale } from './retry-on-stale.ts';

// What providers and repair tenants do to a machine: each a load, a pure decision and one guarded commit.

export async function addHealthOverride(ctx: AppContext, machineId: string, request: OverrideRequest, actor: string): Promise<HealthOverride> {
  return retryOnStale(async () => {
    const { change, override } = addOverride(await requireMachine(ctx, machineId), request, actor, ctx.clock.now());
    await ctx.store.commit(change);
    return override;
  });
}

export async function removeHealthOverride(ctx: AppContext, machineId: string, source: string, actor: string): Promise<void> {
  await retryOnStale(async () => {
    await ctx.store.commit(removeOverride(await requireMachine(ctx, machineId), source, actor, ctx.clock.now()));
  });
}

export async function patchMachineLabels(ctx: AppContext, machineId: string, patch: LabelPatch, actor: string) {
  await retryOnStale(async () => {
    await ctx.store.commit(editMachineLabels(await requireMachine(ctx, machineId), patch, actor, ctx.clock.now()));
  });
  return showMachine(ctx, machineId);
}

/** Whether the org holds the machine's current instance. */
async function holdsMachine(ctx: AppContext, principal: Principal, instanceId: string | undefined): Promise<boolean> {
  if (!instanceId) return false;
  return (await ctx.store.getInstance(instanceId))?.org === principal.org;
}

/** A tenant sees a machine it holds, or any machine when it has the repair capability; others do not exist for it. */
export async function tenantShowMachine(ctx: AppContext, principal: Principal, machineId: string) {
  const machine = await ctx.store.getMachine(machineId);
  const holds = await holdsMachine(ctx, principal, machine?.instanceId);
  if (!machine || (!holds && !(await hasCapability(ctx, principal)))) throw notFound(`machine ${machineId}`);
  const view = await showMachine(ctx, machineId);
  // Another tenant's instance is theirs to know about.
  if (!holds) delete (view as { instanceId?: string }).instanceId;
  return view;
}

/** Repair tenants report progress through machine labels, only while they hold the machine's current instance. */
export async function tenantPatchMachineLabels(ctx: AppContext, principal: Principal, machineId: string, patch: LabelPatch) {
  await tenantShowMachine(ctx, principal, machineId);
  await retryOnStale(async () => {
    const machine = await requireMachine(ctx, machineId);
    if (!(await holdsMachine(ctx, principal, machine.instanceId))) {
      throw forbidden('not-machine-holder', `labels of machine ${machineId} can be set only while your org holds its instance`);
    }
    await ctx.store.commit(editMachineLabels(machine, patch, principal.sub, ctx.clock.now()));
  });
  return tenantShowMachine(ctx, principal, machineId);
}
