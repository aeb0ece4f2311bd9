import type { Change } from '#domain/core/change.ts';
import type { RosterBucket, SiteHeartbeat } from '#domain/machines/heartbeat.ts';
import type { Maintenance } from '#domain/maintenance/maintenance.ts';
import type { Instance, Machine, MetaInstance } from '#domain/core/model.ts';
import type { Reservation } from '#domain/reservations/reservations.ts';
import type { AggregateStores } from '#store/aggregates.ts';
import type { MigrationStatus } from '#store/migrations/runner.ts';

/** A due-index entry: the kind of record that fell due (a reconciler's entity kind) and its id. */
export interface DueEntry {
  entity: string;
  id: string;
}

/**
 * When each record next falls due, by the reconcilers' rules (functions/reconcilers/due-times.ts `dueTimes`): the
 * store writes it into the due index with the record. Given to the store, so the store knows no reconciler.
 */
export interface DueTimes {
  machine(machine: Machine): string | undefined;
  instance(instance: Instance): string | undefined;
  metaInstance(meta: MetaInstance): string | undefined;
  rosterBucket(bucket: RosterBucket): string | undefined;
  maintenance(maintenance: Maintenance): string | undefined;
  reservation(reservation: Reservation): string | undefined;
}

/**
 * DynamoDB throttled a call and kept throttling it for the store's whole retry budget (store/throttle.ts): nothing
 * of it was written (a batch: some of it may have been; its caller resumes). The API answers 503 `throttled`.
 */
export class ThrottledError extends Error {
  override name = 'ThrottledError';
}

/** Someone else changed a record between our read and our write: reload, decide again. */
export class StaleWriteError extends Error {
  override name = 'StaleWriteError';
}

export interface PageRequest {
  limit: number;
  nextToken?: string | undefined;
}

/**
 * What services and reconcilers read and write: each aggregate's store (aggregates.ts lists them, each module under
 * aggregates/ declares its part), a decision's commit across them, and what each adapter does its own way.
 * DynamoFleetStore is the deployed implementation; MemoryFleetStore keeps the same rules in memory for tests. Reads
 * of single records are strongly consistent; index reads may lag.
 */
export interface FleetStore extends AggregateStores {
  /**
   * Commit one decision all-or-nothing: every record guarded by the version it was read at (or by not existing
   * yet), history entries alongside. A lost race raises StaleWriteError and changes nothing.
   */
  commit(change: Change): Promise<void>;
  /** Store the agent's roster time, guarded by version (or by nothing stored yet). */
  putSiteHeartbeat(before: SiteHeartbeat | null, after: Omit<SiteHeartbeat, 'version'>): Promise<SiteHeartbeat>;
  /** The table's data version and each migration's progress (store/migrations). */
  migrationStatus(): Promise<MigrationStatus>;
  /**
   * Declares the deploy of this release done: the table is no longer pinned to the layout of the release before, and
   * the migrations that move its items may start (the next sweep starts them).
   */
  startMigrations(): Promise<MigrationStatus>;
}
