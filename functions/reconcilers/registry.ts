import { fleetSummaryReconciler } from '#reconcilers/fleet-summary.ts';
import { instanceReconciler } from '#reconcilers/instance.ts';
import { machineReconciler } from '#reconcilers/machine.ts';
import { maintenanceReconciler } from '#reconcilers/maintenance.ts';
import { metaInstanceReconciler } from '#reconcilers/meta-instance.ts';
import { orgCapacityReconciler } from '#reconcilers/org-capacity.ts';
import { powerReconciler } from '#reconcilers/power.ts';
import { createRegistry } from '#reconcilers/reconciler.ts';
import { reservationReconciler } from '#reconcilers/reservation.ts';
import { rosterBucketReconciler } from '#reconcilers/roster-bucket.ts';
import { staleCheckReconciler } from '#reconcilers/stale-check.ts';
import { validationReconciler } from '#reconcilers/validation.ts';
import { waitQueueReconciler } from '#reconcilers/wait-queue.ts';
import type { DueEntry } from '#store/port.ts';

/**
 * Every reconciler, in one place. The stream handler and the sweep run them (runner.ts); the stream filters of the
 * CDK stack (lib/stream-filters.ts) are derived from this list; the due times the store writes come from the same
 * rules, kept apart in reconcilers/due-times.ts so that the API functions need no reconciler.
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
  maintenanceReconciler,
  orgCapacityReconciler,
  powerReconciler,
  reservationReconciler,
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
