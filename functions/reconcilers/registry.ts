import { fleetSummaryReconciler } from './fleet-summary.ts';
import { instanceReconciler } from './instance.ts';
import { machineReconciler } from './machine.ts';
import { metaInstanceReconciler } from './meta-instance.ts';
import { createRegistry } from './reconciler.ts';
import { rosterBucketReconciler } from './roster-bucket.ts';
import { staleCheckReconciler } from './stale-check.ts';
import { waitQueueReconciler } from './wait-queue.ts';

/**
 * Every reconciler, in one place. The stream handler and the sweep run them (runner.ts); the stream filters of the
 * CDK stack (lib/stream-filters.ts) and the due times the store writes (store/items.ts) are derived from this list.
 */
export const reconcilers = [instanceReconciler, machineReconciler, metaInstanceReconciler, rosterBucketReconciler, staleCheckReconciler, waitQueueReconciler, fleetSummaryReconciler] as const;

export type EntityKind = (typeof reconcilers)[number]['kind'];

/** What the runner reconciles: a due-index entry, a stream record's concern, a decision's `enqueue`. */
export interface EntityRef {
  entity: EntityKind;
  id: string;
}

export const registry = createRegistry(reconcilers);

export const isEntityKind = (value: unknown): value is EntityKind => typeof value === 'string' && registry.has(value);
