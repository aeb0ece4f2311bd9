import { preventingSources } from '#domain/core/health.ts';
import { addMs, iso } from '#domain/core/time.ts';
import { bucketSettled, type RosterBucket } from '#domain/machines/heartbeat.ts';
import { nextDueAt } from '#domain/maintenance/maintenance-deadlines.ts';
import { walkPending } from '#domain/maintenance/maintenance-waves.ts';
import type { Maintenance } from '#domain/maintenance/maintenance.ts';
import type { Instance, Machine, MetaInstance } from '#domain/core/model.ts';
import { validationDueAt } from '#domain/repair/validation.ts';
import { powerDueAt } from '#domain/instances/power.ts';
import { workPending, type Reservation } from '#domain/reservations/reservations.ts';
import type { RecordKind, RecordTypes } from '#reconcilers/reconciler.ts';
import type { DueTimes } from '#store/port.ts';

// The reconcilers' due-time rules, on their own: the store writes these times into the `due` index with every
// write, so every function that writes needs them, the API ones too, which run no reconciler. Kept apart from the
// reconcilers so that the API bundles carry no reconciler. Each reconciler's watch names its rule from here as its
// `dueAt`; test/unit/due-times.test.ts checks that this list and the registry's watches agree.

/** Instance reconciler: a pending create, or a create claim whose holder may have crashed (it lapses). */
export function instanceDueAt(instance: Instance): string | undefined {
  if (instance.status !== 'Provisioning') return undefined;
  const { creation } = instance;
  if (creation.phase === 'pending') return instance.updatedAt;
  // A claim whose holder crashed lapses: the agent is then asked where the create stands.
  if (creation.phase === 'in-flight') return creation.leaseUntil;
  return undefined;
}

/** Machine (cleanup) reconciler: a pending cleanup, or the lease of one asked for. */
export function cleanupDueAt(machine: Machine): string | undefined {
  const cleanup = machine.cleanup;
  if (machine.state !== 'Cleanup' || !cleanup || cleanup.phase === 'failed') return undefined;
  return cleanup.phase === 'pending' ? machine.updatedAt : cleanup.leaseUntil;
}

/** Meta-instance reconciler: one being deleted, placed or retried, or replacing a member. */
export function metaInstanceDueAt(meta: MetaInstance): string | undefined {
  if (meta.status === 'Deleting' || meta.memberReplacements?.length) return meta.updatedAt;
  if (meta.status === 'Placing' || meta.status === 'Retrying') return meta.nextAttemptAt ?? meta.updatedAt;
  return undefined;
}

/**
 * Meta-instance reconciler, of a member's machine: the sweep must find a failed member's machine too, not only the
 * stream: at once for a health override, and once the heartbeat counts as stale for a stopped one (which no write
 * announces).
 */
export function memberMachineDueAt(machine: Machine): string | undefined {
  if (!machine.boundMetaInstanceId || machine.state !== 'Assigned') return undefined;
  if (preventingSources(machine.healthOverrides).length > 0) return machine.updatedAt;
  if (!machine.heartbeatLive && machine.heartbeatStaleAt) return machine.heartbeatStaleAt;
  return undefined;
}

/**
 * How long the stream has to walk a changed roster bucket before the sweep takes the walk as left over: no longer than
 * any stream invocation may run (lib/function-timeouts.ts: at least 60 s, 96 s by default).
 * A sweep that walked a bucket the stream was walking would load and write its machines a second time, racing the
 * stream for each: a first roster of 10,000 machines takes the local stream about 25 s. A walk that outlasts the
 * grace is still right, only done twice: each machine's write is conditional on its version.
 */
export const ROSTER_WALK_GRACE_MS = 60_000;

/** Roster-bucket reconciler: a bucket whose walk has not settled, once the stream has had its grace. */
export const rosterBucketDueAt = (bucket: RosterBucket): string | undefined =>
  bucketSettled(bucket) ? undefined : iso(addMs(new Date(bucket.changedAt), ROSTER_WALK_GRACE_MS));

/** Maintenance reconciler: a walk to finish, or its next deadline. */
export const maintenanceDueAt = (maintenance: Maintenance): string | undefined => (walkPending(maintenance) ? maintenance.updatedAt : nextDueAt(maintenance));

/** Reservation reconciler: a step of claiming, undoing or handing back still to do. */
export const reservationDueAt = (reservation: Reservation): string | undefined => (workPending(reservation) ? reservation.updatedAt : undefined);

type DueRule<K extends RecordKind> = (record: RecordTypes[K]) => string | undefined;

/** Every reconciler's rule, by the kind of record it is about. */
export const dueRules: { [K in RecordKind]: ReadonlyArray<DueRule<K>> } = {
  machine: [cleanupDueAt, memberMachineDueAt, validationDueAt],
  instance: [instanceDueAt, powerDueAt],
  'meta-instance': [metaInstanceDueAt],
  'roster-bucket': [rosterBucketDueAt],
  'stale-check': [],
  maintenance: [maintenanceDueAt],
  reservation: [reservationDueAt],
};

/** The earliest time any rule wants the record looked at again. */
export function earliestDueAt<K extends RecordKind>(kind: K, record: RecordTypes[K]): string | undefined {
  const times = (dueRules[kind] as ReadonlyArray<DueRule<K>>).map((rule) => rule(record)).filter((t): t is string => t !== undefined);
  return times.length > 0 ? times.sort()[0] : undefined;
}

/** The due index's times: what the store is given to write (store/port.ts DueTimes). */
export const dueTimes: DueTimes = {
  machine: (machine) => earliestDueAt('machine', machine),
  instance: (instance) => earliestDueAt('instance', instance),
  metaInstance: (meta) => earliestDueAt('meta-instance', meta),
  rosterBucket: (bucket) => earliestDueAt('roster-bucket', bucket),
  maintenance: (maintenance) => earliestDueAt('maintenance', maintenance),
  reservation: (reservation) => earliestDueAt('reservation', reservation),
};
