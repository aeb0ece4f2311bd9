import { preventingSources } from '#domain/core/health.ts';
import type { Machine } from '#domain/core/model.ts';
import { hasOverride, SOURCES } from '#domain/core/overrides.ts';
import type { lifecycles } from '#domain/core/vocabulary.ts';

// One word for where a machine is in its life, for people and dashboards (docs/api.md "Lifecycle"). Derived from the
// record alone, never stored: it cannot disagree with what decides allocation.

export type Lifecycle = (typeof lifecycles)[number];

/** The alert a declared maintenance's override carries: the machine is out for planned work. */
export const MAINTENANCE_ALERT = 'Maintenance';

const underMaintenance = (machine: Machine): boolean => machine.healthOverrides.some((o) => o.alerts.some((a) => a.id === MAINTENANCE_ALERT));

export function lifecycleOf(machine: Machine): Lifecycle {
  if (machine.retired) return 'retired';
  if (underMaintenance(machine)) return 'maintenance';
  if (machine.state === 'Assigned') return hasOverride(machine, SOURCES.repairRequest) ? 'in-repair' : 'assigned';
  if (machine.state === 'Cleanup') return 'cleanup';
  if (machine.validation?.state === 'running') return machine.validation.reason === 'registration' ? 'commissioning' : 'validating';
  if (hasOverride(machine, SOURCES.outForRepair)) return 'in-repair';
  if (machine.cleanup?.phase === 'failed' || preventingSources(machine.healthOverrides).length > 0) return 'quarantined';
  return 'available';
}
