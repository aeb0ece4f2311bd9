import { fleetSummaryReconciler } from '#reconcilers/fleet-summary.ts';
import { instanceReconciler } from '#reconcilers/instance.ts';
import { machineReconciler } from '#reconcilers/machine.ts';
import { metaInstanceReconciler } from '#reconcilers/meta-instance.ts';
import { createRegistry } from '#reconcilers/reconciler.ts';
import { rosterBucketReconciler } from '#reconcilers/roster-bucket.ts';
import { staleCheckReconciler } from '#reconcilers/stale-check.ts';
import { validationReconciler } from '#reconcilers/validation.ts';
import { waitQueueReconciler } from '#reconcilers/wait-queue.ts';
import type { DueEntry, DueTimes } from '#store/port.ts';

/**
 * Every reconciler, in one place. The stream handler and the sweep run them (runner.ts); the stream filters of the
 * CDK stack (lib/stream-filters.ts) and the due times the store writes (store/items.ts) are derived from this list.
 */
export const reconcilers = [
  instanceReconciler,
  machineReconciler,
  metaInstanceReconciler,
  rosterBucketReconciler,
  staleCheckReconciler,
  waitQueueReconciler,
  validationReconciler,
  fleetSummaryReconciler,
] as const;

export type EntityKind = (typeof reconcilers)[number]['kind'];

/** What the runner reconciles: a due-index entry, a stream record's concern, a decision's `enqueue`. */
export interface EntityRef {
  entity: EntityKind;
  id: string;
}

export const registry = createRegistry(reconcilers);

export const isEntityKind = (value: unknown): value is EntityKind => typeof value === 'string' && registry.has(value);

/** A due-index entry some reconciler knows (an entry of a kind no longer reconciled is passed over). */
export const isEntityRef = (entry: DueEntry): entry is EntityRef => isEntityKind(entry.entity);

/** The due index's times, by the reconcilers' rules: what the store is given to write (store/port.ts DueTimes). */
export const dueTimes: DueTimes = {
  machine: (machine) => registry.dueAtOf('machine', machine),
  instance: (instance) => registry.dueAtOf('instance', instance),
  metaInstance: (meta) => registry.dueAtOf('meta-instance', meta),
  rosterBucket: (bucket) => registry.dueAtOf('roster-bucket', bucket),
};
