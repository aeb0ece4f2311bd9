import { auditEntry, auditTargets, type Requester } from '#domain/events/audit.ts';
import { addOverride, editMachineLabels, removeOverride, type LabelPatch } from '#domain/repair/machine-edits.ts';
import type { HealthOverride, Machine, Principal } from '#domain/core/model.ts';
import type { OverrideRequest } from '#domain/core/overrides.ts';
import { forbidden, notFound } from '#domain/core/rejection.ts';
import type { AppContext } from '#runtime/context.ts';
import { hasCapability, requireMachine } from '#services/instances.ts';
import { showMachine } from '#services/machines.ts';
import { retryOnStale } from '#runtime/retry-on-stale.ts';

// What providers and repair tenants do to a machine: each a load, a pure decision and one guarded commit; a
// provider's commit carries its audit entry.

const overrideOf = (machine: Machine, source: string) => machine.healthOverrides.find((o) => o.source === source);

export async function addHealthOverride(ctx: AppContext, machineId: string, request: OverrideRequest, by: Requester): Promise<HealthOverride> {
  return retryOnStale(async () => {
    const machine = await requireMachine(ctx, machineId);
    const now = ctx.clock.now();
    const { change, override } = addOverride(machine, request, by.actor, now);
    const audit = auditEntry(by, now, 'health-override-added', auditTargets.machine(machineId), {
      before: overrideOf(machine, override.source),
      after: override,
    });
    await ctx.store.commit({ ...change, audit });
    return override;
  });
}

export async function removeHealthOverride(ctx: AppContext, machineId: string, source: string, by: Requester): Promise<void> {
  await retryOnStale(async () => {
    const machine = await requireMachine(ctx, machineId);
    const now = ctx.clock.now();
    const change = removeOverride(machine, source, by.actor, now);
    const audit = auditEntry(by, now, 'health-override-removed', auditTargets.machine(machineId), { before: overrideOf(machine, source) });
    await ctx.store.commit({ ...change, audit });
  });
}

export async function patchMachineLabels(ctx: AppContext, machineId: string, patch: LabelPatch, by: Requester) {
  await retryOnStale(async () => {
    const machine = await requireMachine(ctx, machineId);
    const now = ctx.clock.now();
    const change = editMachineLabels(machine, patch, by.actor, now);
    const after = change.machines![0]!.after.labels;
    await ctx.store.commit({ ...change, audit: auditEntry(by, now, 'labels-changed', auditTargets.machine(machineId), { before: machine.labels, after }) });
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
