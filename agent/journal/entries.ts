// What the journal records: one entry per accepted call and one per step of the work it started. Keyed by the
// create's clientToken (an instance), a power request's id, a validationId or a maintenanceId.

import type { CreateInstanceRequest, PowerRequest, StartMaintenanceRequest, ValidationReportBody, ValidationRequest } from '#site/agent-contract.ts';

interface Stamp {
  /** ISO time the entry was written. */
  at: string;
}

export type JournalEntry = Stamp &
  (
    | ({ t: 'create' } & CreateInstanceRequest)
    /** The same create (clientToken) retried under another name: both names are the one instance. */
    | { t: 'alias'; clientToken: string; name: string }
    | { t: 'provisioned'; clientToken: string; ok: boolean; message: string }
    | { t: 'delete'; clientToken: string }
    | { t: 'cleaned'; clientToken: string; ok: boolean; message: string }
    | { t: 'cleanup-reported'; clientToken: string }
    | { t: 'power'; id: string; clientToken: string; machineId: string; action: PowerRequest['action'] }
    /** Written just before the BMC is asked: after a crash, a cycle so marked may have happened and is not sent again. */
    | { t: 'power-sent'; id: string }
    | { t: 'power-done'; id: string; ok: boolean; message: string }
    | ({ t: 'validation'; machineId: string } & ValidationRequest)
    | { t: 'validated'; validationId: string; report: ValidationReportBody }
    | { t: 'validation-reported'; validationId: string }
    | ({ t: 'maintenance'; machineId: string } & StartMaintenanceRequest)
    | { t: 'maintained'; maintenanceId: string; ok: boolean; message: string }
    | { t: 'maintenance-reported'; maintenanceId: string }
  );

/** An entry as the code writes it: the journal stamps the time. */
export type NewEntry = JournalEntry extends infer E ? (E extends Stamp ? Omit<E, 'at'> : never) : never;
