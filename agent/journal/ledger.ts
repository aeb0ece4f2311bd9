// What the agent holds, as the journal's entries say: built by applying every entry in order, the same way at a
// restart (replay) as while running, so what it answers after a crash is what it would have answered before.

import type { CreateInstanceRequest, PowerRequest, StartMaintenanceRequest, ValidationReportBody, ValidationRequest } from '#site/agent-contract.ts';
import type { JournalEntry } from './entries.ts';

export type InstancePhase = 'provisioning' | 'present' | 'provision-failed' | 'cleaning' | 'cleaned';

export interface InstanceRecord {
  request: CreateInstanceRequest;
  /** Every name this create was sent under (a retry after a lost answer uses `<name>-rN`). */
  names: string[];
  phase: InstancePhase;
  /** The provision hook's words when it failed. */
  provisionMessage?: string;
  cleanup?: { ok: boolean; message: string };
  entries: JournalEntry[];
}

export interface PowerRecord {
  id: string;
  clientToken: string;
  machineId: string;
  action: PowerRequest['action'];
  sent: boolean;
  done?: { ok: boolean; message: string };
  entries: JournalEntry[];
}

export interface ValidationRecord {
  machineId: string;
  request: ValidationRequest;
  report?: ValidationReportBody;
  entries: JournalEntry[];
}

export interface MaintenanceRecord {
  machineId: string;
  request: StartMaintenanceRequest;
  outcome?: { ok: boolean; message: string };
  entries: JournalEntry[];
}

export interface Ledger {
  instances: Map<string, InstanceRecord>;
  /** Each name the agent answers for, to its create's clientToken. */
  names: Map<string, string>;
  power: Map<string, PowerRecord>;
  validations: Map<string, ValidationRecord>;
  maintenances: Map<string, MaintenanceRecord>;
  /**
   * Validation and maintenance ids whose outcome was reported: the same id asked again is answered, not run again.
   * Kept for the process's life (a compacted journal leaves them out), as the controller repeats a call within it.
   */
  reported: { validations: Set<string>; maintenances: Set<string> };
}

export function emptyLedger(): Ledger {
  return {
    instances: new Map(),
    names: new Map(),
    power: new Map(),
    validations: new Map(),
    maintenances: new Map(),
    reported: { validations: new Set(), maintenances: new Set() },
  };
}

/** Applies one entry. Records whose story is over (reported, or done) are dropped: the journal's compaction keeps the rest. */
export function applyEntry(ledger: Ledger, entry: JournalEntry): void {
  switch (entry.t) {
    case 'create': {
      const { t: _t, at: _at, ...request } = entry;
      ledger.instances.set(entry.clientToken, { request, names: [entry.name], phase: 'provisioning', entries: [entry] });
      ledger.names.set(entry.name, entry.clientToken);
      return;
    }
    case 'alias':
      withInstance(ledger, entry, (record) => {
        record.names.push(entry.name);
        ledger.names.set(entry.name, entry.clientToken);
      });
      return;
    case 'provisioned':
      withInstance(ledger, entry, (record) => {
        if (!entry.ok) record.provisionMessage = entry.message;
        // A delete that came during the provisioning stands: the cleanup queued behind it runs next.
        if (record.phase === 'provisioning') record.phase = entry.ok ? 'present' : 'provision-failed';
      });
      return;
    case 'delete':
      withInstance(ledger, entry, (record) => void (record.phase = 'cleaning'));
      return;
    case 'cleaned':
      withInstance(ledger, entry, (record) => {
        record.phase = 'cleaned';
        record.cleanup = { ok: entry.ok, message: entry.message };
      });
      return;
    case 'cleanup-reported': {
      const record = ledger.instances.get(entry.clientToken);
      if (!record) return;
      ledger.instances.delete(entry.clientToken);
      for (const name of record.names) if (ledger.names.get(name) === entry.clientToken) ledger.names.delete(name);
      return;
    }
    case 'power':
      ledger.power.set(entry.id, {
        id: entry.id,
        clientToken: entry.clientToken,
        machineId: entry.machineId,
        action: entry.action,
        sent: false,
        entries: [entry],
      });
      return;
    case 'power-sent': {
      const record = ledger.power.get(entry.id);
      if (!record) return;
      record.sent = true;
      record.entries.push(entry);
      return;
    }
    case 'power-done':
      // Nothing is reported for power: once done it is only history.
      ledger.power.delete(entry.id);
      return;
    case 'validation': {
      const { t: _t, at: _at, machineId, ...request } = entry;
      ledger.validations.set(entry.validationId, { machineId, request, entries: [entry] });
      return;
    }
    case 'validated': {
      const record = ledger.validations.get(entry.validationId);
      if (!record) return;
      record.report = entry.report;
      record.entries.push(entry);
      return;
    }
    case 'validation-reported':
      ledger.validations.delete(entry.validationId);
      ledger.reported.validations.add(entry.validationId);
      return;
    case 'maintenance': {
      const { t: _t, at: _at, machineId, ...request } = entry;
      ledger.maintenances.set(entry.maintenanceId, { machineId, request, entries: [entry] });
      return;
    }
    case 'maintained': {
      const record = ledger.maintenances.get(entry.maintenanceId);
      if (!record) return;
      record.outcome = { ok: entry.ok, message: entry.message };
      record.entries.push(entry);
      return;
    }
    case 'maintenance-reported':
      ledger.maintenances.delete(entry.maintenanceId);
      ledger.reported.maintenances.add(entry.maintenanceId);
      return;
  }
}

function withInstance(ledger: Ledger, entry: JournalEntry & { clientToken: string }, change: (record: InstanceRecord) => void): void {
  const record = ledger.instances.get(entry.clientToken);
  if (!record) return;
  change(record);
  record.entries.push(entry);
}

/** The entries still needed to rebuild this ledger: what a compacted journal holds. */
export function liveEntries(ledger: Ledger): JournalEntry[] {
  const all = [
    ...[...ledger.instances.values()].flatMap((r) => r.entries),
    ...[...ledger.power.values()].flatMap((r) => r.entries),
    ...[...ledger.validations.values()].flatMap((r) => r.entries),
    ...[...ledger.maintenances.values()].flatMap((r) => r.entries),
  ];
  return all.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
}
