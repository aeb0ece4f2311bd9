import type { Change } from '#domain/core/change.ts';
import { repairEvent } from '#domain/events/events.ts';
import type { Instance, Issue, Machine } from '#domain/core/model.ts';
import { buildOverride, hasOverride, SOURCES, type OverrideRequest } from '#domain/core/overrides.ts';
import { conflict, notFound } from '#domain/core/rejection.ts';
import { applyOverrideEdits } from '#domain/repair/repair.ts';
import { iso } from '#domain/core/time.ts';

export type LabelPatch = Record<string, string | null>;

/** Set labels; a null value removes the label. */
export function patchLabels(labels: Record<string, string>, patch: LabelPatch): Record<string, string> {
  const next = { ...labels };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete next[key];
    else next[key] = value;
  }
  return next;
}

export function editMachineLabels(machine: Machine, patch: LabelPatch, actor: string, now: Date): Change {
  const at = iso(now);
  const labels = patchLabels(machine.labels, patch);
  return {
    machines: [{ before: machine, after: { ...machine, labels, updatedAt: at } }],
    history: [
      {
        machineId: machine.id,
        at,
        actor,
        action: 'labels-changed',
        labels,
        changes: Object.fromEntries(Object.entries(patch).map(([k, v]) => [`labels.${k}`, { from: machine.labels[k], to: v ?? undefined }])),
      },
    ],
  };
}

/**
 * A provider adds an override from a template. Full and online repair are never active together, so a repair
 * request waits until online repair is cleared.
 */
export function addOverride(
  machine: Machine,
  request: OverrideRequest,
  actor: string,
  now: Date,
): { change: Change; override: ReturnType<typeof buildOverride> } {
  const at = iso(now);
  const override = buildOverride(machine.id, request, actor, at);
  if (override.source === SOURCES.repairRequest && hasOverride(machine, SOURCES.onlineRepair)) {
    throw conflict('online-repair-active', `machine ${machine.id} is under online repair; clear it before requesting full repair`);
  }
  const { overrides, history } = applyOverrideEdits(machine, { add: [override], remove: [] }, actor, at);
  const after: Machine = { ...machine, healthOverrides: overrides, updatedAt: at };
  const events = override.source === SOURCES.repairRequest ? [repairEvent('RepairRequested', after, { actor, issue: override.issue }, at)] : [];
  return { override, change: { machines: [{ before: machine, after }], history: [...history, ...events] } };
}

export function removeOverride(machine: Machine, source: string, actor: string, now: Date): Change {
  if (!hasOverride(machine, source)) throw notFound(`health override ${source} on machine ${machine.id}`);
  const at = iso(now);
  const { overrides, history } = applyOverrideEdits(machine, { add: [], remove: [source] }, actor, at);
  return { machines: [{ before: machine, after: { ...machine, healthOverrides: overrides, updatedAt: at } }], history };
}

export interface InstancePatch {
  labels?: LabelPatch | undefined;
  onlineRepair?: { enabled: boolean; issue?: Issue | undefined } | undefined;
}

const EDITABLE: ReadonlySet<Instance['status']> = new Set(['Provisioning', 'Ready', 'Repairing']);

/**
 * A tenant's PATCH of its instance: labels, and online repair (Ready → Repairing with `request-online-repair` on
 * the machine, which blocks release; disabling returns it to Ready).
 */
export function patchInstance(instance: Instance, machine: Machine, patch: InstancePatch, actor: string, now: Date): { change: Change; instance: Instance } {
  if (!EDITABLE.has(instance.status)) throw conflict('invalid-state', `instance ${instance.id} is ${instance.status}`);
  const at = iso(now);
  let next: Instance = { ...instance, updatedAt: at };
  let nextMachine: Machine | null = null;
  const history: Change['history'] = [];
  if (patch.labels) {
    next = { ...next, labels: patchLabels(instance.labels, patch.labels) };
    history.push({ machineId: machine.id, at, actor, action: 'instance-labels-changed', instanceId: instance.id, labels: next.labels });
  }
  const online = patch.onlineRepair;
  if (online?.enabled && instance.status !== 'Repairing') {
    if (instance.status !== 'Ready') throw conflict('invalid-state', `online repair needs a Ready instance; ${instance.id} is ${instance.status}`);
    if (hasOverride(machine, SOURCES.repairRequest)) {
      throw conflict('full-repair-active', `machine ${machine.id} has a repair request; online and full repair are never active together`);
    }
    const override = buildOverride(machine.id, { template: 'request-online-repair', issue: online.issue, tenantMessage: online.issue?.summary }, actor, at);
    const edited = applyOverrideEdits(machine, { add: [override], remove: [] }, actor, at, instance.id);
    nextMachine = { ...machine, healthOverrides: edited.overrides, updatedAt: at };
    next = { ...next, status: 'Repairing' };
    history.push(...edited.history);
  } else if (online && !online.enabled && instance.status === 'Repairing') {
    const edited = applyOverrideEdits(machine, { add: [], remove: [SOURCES.onlineRepair] }, actor, at, instance.id);
    nextMachine = { ...machine, healthOverrides: edited.overrides, updatedAt: at };
    next = { ...next, status: 'Ready' };
    history.push(...edited.history);
  }
  return {
    instance: next,
    change: {
      instances: [{ before: instance, after: next }],
      machines: nextMachine ? [{ before: machine, after: nextMachine }] : [],
      history,
    },
  };
}
