import type { MaintenanceEventType } from '#domain/events/event-versions.ts';
import { eventEntry } from '#domain/events/events.ts';
import type { Maintenance } from '#domain/maintenance/maintenance.ts';
import type { HistoryEntry } from '#domain/core/model.ts';

// A maintenance's events. Each is carried by a history entry in the maintenance's own history (its subject is the
// maintenance id), committed with the change it reports; the stream publishes it like any other event.

export function maintenanceEvent(type: MaintenanceEventType, maintenance: Maintenance, at: string, extra: Record<string, unknown>): HistoryEntry {
  const { id: maintenanceId, kind, category } = maintenance;
  return eventEntry(maintenanceId, 'fleetward-maintenance', type, at, { maintenanceId, kind, category, at, ...extra });
}

/** The same occurrence in one machine's history, so its history tells it too (published once, from the maintenance's). */
export const maintenanceMachineEvent = (machineId: string, type: MaintenanceEventType, maintenance: Maintenance, at: string): HistoryEntry => ({
  machineId,
  at,
  actor: 'fleetward-maintenance',
  action: 'maintenance-event',
  message: `${type} (maintenance ${maintenance.id})`,
});
