import { describe, expect, it } from 'vitest';
import { lifecycleOf } from '#domain/machines/lifecycle.ts';
import { declareMaintenance } from '#domain/maintenance/maintenance.ts';
import { maintenanceOverride } from '#domain/maintenance/maintenance-waves.ts';
import { withValidationStarted } from '#domain/repair/validation.ts';
import { aMachine, AT, T0 } from '#test/support/fixtures.ts';

// One word for where a machine is (docs/api.md "Lifecycle"), here for declared maintenance and what follows it.

const maintenance = declareMaintenance(
  'mnt-1',
  { kind: 'emergency', category: 'firmware', reason: 'BMC firmware', scope: { machineIds: ['m-1'] }, handBackBy: AT, windowMinutes: 60 },
  ['m-1'],
  [],
  'ops',
  T0,
  { minHandBackDays: 0, emergencyMinHandBackMinutes: 0, noticeHours: 24, resyncSeconds: 300 },
);

describe('lifecycle', () => {
  it('is maintenance under the maintenance override, also while the validation after it runs, then validating', () => {
    const underMaintenance = aMachine({ healthOverrides: [maintenanceOverride(maintenance, 'm-1', AT)] });
    expect(lifecycleOf(underMaintenance)).toBe('maintenance');
    const validating = withValidationStarted(underMaintenance, { id: 'v-1', reason: 'maintenance', suite: 'standard', actor: 'ops', at: AT }).machine;
    expect(lifecycleOf(validating)).toBe('maintenance');
    expect(lifecycleOf({ ...validating, healthOverrides: validating.healthOverrides.filter((o) => o.source !== 'maintenance') })).toBe('validating');
    expect(lifecycleOf(aMachine())).toBe('available');
  });
});
