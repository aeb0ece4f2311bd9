import type { Change } from '#domain/core/change.ts';
import { allocatability, lastSeenAt, type HeartbeatView } from '#domain/core/health.ts';
import type { HistoryEntry, Machine } from '#domain/core/model.ts';
import { machineResponse, viewOf } from '#domain/core/responses.ts';
import { iso } from '#domain/core/time.ts';
import { commissioned } from '#domain/repair/validation.ts';
import { lifecycleOf } from '#domain/machines/lifecycle.ts';

export interface MachineRegistration {
  id: string;
  machineType: string;
  rack?: string;
  nvlinkDomain?: string | undefined;
  labels?: Record<string, string>;
}

/**
 * Register a machine or update its description. Type, rack and the given labels are the provider's to set;
 * state, instance and overrides are never touched by a re-registration. A new machine given `commissioning` (the
 * site validates after registration) starts that validation with it.
 */
export function registerMachine(
  existing: Machine | null,
  registration: MachineRegistration,
  actor: string,
  now: Date,
  commissioning?: { validationId: string; suite: string },
): Change | null {
  const at = iso(now);
  const rack = registration.rack ?? existing?.rack ?? 'default';
  const nvlinkDomain = registration.nvlinkDomain ?? existing?.nvlinkDomain;
  const inDomain = nvlinkDomain === undefined ? {} : { nvlinkDomain };
  if (!existing) {
    const machine: Machine = {
      id: registration.id,
      machineType: registration.machineType,
      rack,
      ...inDomain,
      state: 'Ready',
      labels: registration.labels ?? {},
      healthOverrides: [],
      heartbeatLive: false,
      registered: { by: actor, machineType: registration.machineType, rack, ...inDomain },
      version: 0,
      createdAt: at,
      updatedAt: at,
    };
    const after = commissioning ? commissioned(machine, { id: commissioning.validationId, suite: commissioning.suite, actor, at }) : machine;
    return { machines: [{ before: null, after }], history: [] };
  }
  const labels = { ...existing.labels, ...registration.labels };
  const unchanged =
    existing.machineType === registration.machineType &&
    existing.rack === rack &&
    existing.nvlinkDomain === nvlinkDomain &&
    JSON.stringify(labels) === JSON.stringify(existing.labels);
  if (unchanged) return null;
  const after: Machine = { ...existing, machineType: registration.machineType, rack, ...inDomain, labels, updatedAt: at };
  return {
    machines: [{ before: existing, after }],
    history: [
      {
        machineId: existing.id,
        at,
        actor,
        action: 'machine-updated',
        changes: {
          machineType: { from: existing.machineType, to: after.machineType },
          rack: { from: existing.rack, to: rack },
          ...(existing.nvlinkDomain === nvlinkDomain ? {} : { nvlinkDomain: { from: existing.nvlinkDomain ?? null, to: nvlinkDomain ?? null } }),
        },
      },
    ],
  };
}

/** A machine's first history entry, read from its record (see Machine.registered). */
export function registrationEntry(machine: Machine): HistoryEntry | null {
  const { registered } = machine;
  if (!registered) return null;
  return {
    machineId: machine.id,
    at: machine.createdAt,
    actor: registered.by,
    action: 'machine-registered',
    changes: {
      machineType: { to: registered.machineType },
      rack: { to: registered.rack },
      ...(registered.nvlinkDomain ? { nvlinkDomain: { to: registered.nvlinkDomain } } : {}),
    },
  };
}

/**
 * A page of the machine's history, newest first, with its registration entry after the stored ones on the last
 * page. A page that holds `limit` stored entries always has a next token (the store's, even when nothing follows),
 * so the entry goes on a page with room for it.
 */
export function historyPage(machine: Machine, stored: { items: HistoryEntry[]; nextToken?: string | undefined }) {
  const registration = stored.nextToken ? null : registrationEntry(machine);
  return { items: registration ? [...stored.items, registration] : stored.items, nextToken: stored.nextToken };
}

/** The machine as the API shows it (API.md "Machine"): the record with its allocatability and when it was last seen. */
export function machineView(machine: Machine, heartbeat: HeartbeatView, now: Date) {
  const { lastHeartbeatAt: _recorded, ...record } = machine;
  const seen = lastSeenAt(machine, heartbeat);
  return viewOf(machineResponse, {
    ...record,
    ...allocatability(machine, heartbeat, now),
    lifecycle: lifecycleOf(machine),
    ...(seen ? { lastHeartbeatAt: seen } : {}),
  });
}

export type MachineView = ReturnType<typeof machineView>;
