import type { HealthAlert, Instance, Machine, InstanceMaintenanceNotice } from '#domain/core/model.ts';
import { SOURCES } from '#domain/core/overrides.ts';
import type { instanceHealths } from '#domain/core/vocabulary.ts';

// What a tenant learns about the health of the machine under its instance (docs/api.md "Tenant view"): one word,
// and the alerts' tenant messages. Never a provider's private message, never anything of another tenant.

export type InstanceHealth = (typeof instanceHealths)[number];

export const GENERIC_DEGRADED = 'The machine under this instance reports a health problem; the provider is aware of it';

const ON_MACHINE: ReadonlySet<Instance['status']> = new Set(['Provisioning', 'Ready', 'Repairing']);

/**
 * The alerts that make a held machine degraded: those of overrides that do not keep the machine out of allocation
 * (they are about the machine as the tenant uses it), and the site agent's `hardware-health` ones whatever they do.
 * Overrides that only keep a machine out of the pool concern the provider, not the tenant holding it.
 */
function degradingAlerts(machine: Machine): HealthAlert[] {
  return machine.healthOverrides.flatMap((override) => {
    const prevents = override.alerts.some((a) => a.classifications.includes('PreventAllocations'));
    return override.source === SOURCES.hardwareHealth || !prevents ? override.alerts : [];
  });
}

const maintenanceDetail = (notice: InstanceMaintenanceNotice): string =>
  `${notice.kind} maintenance ${notice.id} (${notice.category}): hand the instance back by ${notice.handBackBy}`;

/** The instance's health, judged on its machine only while the instance is the machine's current one. */
export function instanceHealth(instance: Instance, machine: Machine | null): { health: InstanceHealth; healthDetail?: string } {
  if (!ON_MACHINE.has(instance.status)) return { health: 'healthy' };
  // A declared maintenance wants the machine back: the notice is the tenant's own (docs/api.md "Declared maintenance").
  if (instance.maintenance) return { health: 'maintenance-required', healthDetail: maintenanceDetail(instance.maintenance) };
  if (machine?.instanceId !== instance.id) return { health: 'healthy' };
  const alerts = degradingAlerts(machine);
  if (alerts.length === 0) return { health: 'healthy' };
  const messages = [...new Set(alerts.flatMap((a) => (a.tenantMessage ? [a.tenantMessage] : [])))];
  return { health: 'degraded', healthDetail: messages.length > 0 ? messages.join('; ') : GENERIC_DEGRADED };
}
