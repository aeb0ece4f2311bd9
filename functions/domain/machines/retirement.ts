import type { Change } from '#domain/core/change.ts';
import { repairEvent } from '#domain/events/events.ts';
import type { Machine } from '#domain/core/model.ts';
import { conflict } from '#domain/core/rejection.ts';
import { iso } from '#domain/core/time.ts';

// Retirement takes a machine out for good (docs/api.md "Retirement"): never allocated again, out of the capacity
// counts, its record and history kept.

/** The change that retires the machine; null when it is retired already (the same request again). */
export function retireMachine(machine: Machine, reason: string, actor: string, now: Date): Change | null {
  if (machine.retired) return null;
  if (machine.instanceId !== undefined || machine.cleanup !== undefined) {
    const holding = machine.instanceId ?? machine.cleanup!.instanceId;
    throw conflict('machine-in-use', `machine ${machine.id} still holds instance ${holding}; retire it once that is released and cleaned up`);
  }
  const at = iso(now);
  const after: Machine = { ...machine, retired: { at, by: actor, reason }, updatedAt: at };
  return {
    machines: [{ before: machine, after }],
    history: [
      { machineId: machine.id, at, actor, action: 'machine-retired', message: reason, changes: { retired: { to: true } } },
      repairEvent('MachineRetired', after, { actor }, at, undefined, { reason }),
    ],
  };
}
