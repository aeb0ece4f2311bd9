import type { Change, Versioned } from '#domain/core/change.ts';
import type { RosterBucket, StaleCheck } from '#domain/machines/heartbeat.ts';
import type { Maintenance } from '#domain/maintenance/maintenance.ts';
import type { Reservation } from '#domain/reservations/reservations.ts';
import type { Instance, Machine, MetaInstance } from '#domain/core/model.ts';
import type { AppContext } from '#runtime/context.ts';
import type { RecordIds } from '#store/aggregates/records.ts';

// The shape of a reconciler (Kubernetes controller style): it watches records, which map a change to the entities
// that must look again; it loads what its decision needs, decides purely, and names what must look again next
// instead of calling other reconcilers. functions/reconcilers/runner.ts drives them; registry.ts lists them.

/** The records reconcilers watch: what the table stream and the due index carry, by kind (the items' `entity`). */
export interface RecordTypes {
  machine: Machine;
  instance: Instance;
  'meta-instance': MetaInstance;
  'roster-bucket': RosterBucket;
  'stale-check': StaleCheck;
  maintenance: Maintenance;
  reservation: Reservation;
}

export type RecordKind = keyof RecordTypes;

/** An entity to reconcile: a reconciler's kind and an id it understands. */
export interface Ref {
  entity: string;
  id: string;
  /** Records its load will probably need besides its own, named by the change that concerned it (see `Concern`). */
  related?: RecordIds;
}

/**
 * An id that must look again, optionally with the ids of records its load will probably read along with it, as
 * the changed record's image names them (a machine's instance in cleanup): the load can then read them all in one
 * request instead of one after the other. A hint only: the load checks it against what it read, and reads what the
 * hint got wrong.
 */
export type Concern = string | { id: string; related?: RecordIds } | null | undefined;

/**
 * Whether a record is delivered because it fell due (the sweep delivers the same image on both sides, the same
 * object) rather than because it changed. A watch that narrows what it is concerned by keeps these.
 */
export const fellDue = <R>(before: R | null, after: R | null): boolean => before !== null && before === after;

/** How a reconciler follows the records of one kind. */
export interface Watch<R> {
  /**
   * The ids (of the watching reconciler's kind) that must look again after a record of this kind changed, from its
   * images before and after. Either image may be missing (a new record; a stream record carrying keys only); `id` is
   * the record's own id. A record that fell due is delivered again with the same image on both sides (`fellDue`).
   * A watch names only the changes its reconciler can act on: every id it names costs that reconciler a load.
   */
  concerns(before: R | null, after: R | null, id: string): Iterable<Concern>;
  /**
   * When such a record must be looked at again although nothing writes it (a lease lapses, a heartbeat goes stale),
   * as an ISO time. The store writes the earliest of all watchers' times into the sparse `due` index.
   */
  dueAt?(record: R): string | undefined;
}

export type Watches = { [K in RecordKind]?: Watch<RecordTypes[K]> };

interface Outcome {
  /** Look at this entity again at this time; when it has come, the runner does so at once (another pass). */
  requeueAt?: Date;
  /**
   * Look again at once only if the change lost its race (another pass on fresh state): for a change whose
   * success leaves nothing more to do, and whose loss no other trigger would bring back (a shared aggregate).
   */
  retryIfLost?: boolean;
  /** Other entities that must look again, served in this order, each at most once per run. */
  enqueue?: Ref[];
  /** What the change does, for the log. */
  summary?: string;
  /**
   * Changes of one record each, independent of each other, committed before `change` and each on its own (a
   * conditional write of one item costs half a transaction); `change` is committed only if every one of them was.
   */
  separately?: Change[];
}

/**
 * What one look at an entity decided: a change committed as ONE conditional transaction, and optionally a side
 * effect that the change claims. The runner performs the effect only once its claim has committed, then records the
 * effect's result through the reconciler's pure `settle`.
 */
export type Decision<E = never> = Outcome & ({ change?: Change; effect?: undefined } | { change: Change; effect: E });

/** A side effect on the outside world (the site agent), claimed before and settled after. */
export interface Effects<S, E, R> {
  perform(ctx: AppContext, effect: E): Promise<R>;
  /** Pure: what the effect's result changes, decided on state loaded afresh after it; null when nothing. */
  settle(snapshot: S, effect: E, result: R): Change | null;
}

export interface Reconciler<K extends string = string, S = unknown, E = unknown, R = unknown> {
  kind: K;
  watches: Watches;
  /**
   * Reads what the decision needs through `ctx.store`; null when the entity is gone. `related`: ids of records it
   * will probably need besides the entity's own (a hint from the change that concerned it, or `relatedOf` the
   * snapshot before), to read in the same request; the load must not trust them beyond that.
   */
  load(ctx: AppContext, id: string, related?: RecordIds): Promise<S | null>;
  /** The related records of a snapshot: what loading the same entity afresh (after an effect, another pass) reads along. */
  relatedOf?(snapshot: S): RecordIds;
  /**
   * Pure: the snapshot as its committed `change` left it (the records it wrote as now stored, `now` the time given),
   * on which the runner settles an effect first instead of loading afresh. Only for a reconciler whose settle
   * commits guard every record they decide on: what others wrote meanwhile fails that commit, and the runner then
   * settles on a fresh load, as it does when this snapshot leads to no change or `advance` gives null.
   */
  advance?(snapshot: S, change: Change, now: Date): S | null;
  /** Pure: no I/O, no clock (the snapshot carries `now`). */
  decide(snapshot: S): Decision<E>;
  effects?: Effects<S, E, R>;
  /**
   * A lost race leaves no other trigger behind (the rival wrote a shared aggregate, not this entity's record): when
   * the passes run out, fail the run so the stream delivers the record again instead of dropping the change.
   */
  settlesOrFails?: boolean;
  /**
   * Entities of this kind that share a group are looked at together: the ids of a group that come up in one run
   * join one load, decision and commit (as many as its `room` admits), and its batches start one after another once
   * the run's other work is done. For aggregates that many records feed: a burst of changes then costs a
   * transaction per group and room instead of one per id, and the group's commits never race each other within a
   * run. `load` is then the batch of one.
   */
  batch?: {
    groupOf(id: string): string;
    /** The room of a new batch: what fits one decision's transaction. */
    room(): BatchRoom;
    load(ctx: AppContext, ids: string[]): Promise<S | null>;
  };
}

/** How much more one batch takes: `admit` counts the id in and answers true, or false (leaving it out) when full. */
export interface BatchRoom {
  admit(id: string): boolean;
}

/** Room for `size` ids, whatever they are. */
export const roomFor = (size: number) => (): BatchRoom => {
  let taken = 0;
  return { admit: () => taken < size && ++taken > 0 };
};

/** A record as the store holds it once its change committed: the `after` image, one version on. */
export const committedRecord = <T extends { version: number }>(pair: Versioned<T>): T => ({ ...pair.after, version: (pair.before?.version ?? -1) + 1 });

/** The record of this id a change wrote, as now stored; undefined when the change did not write it. */
export function committedById<T extends { id: string; version: number }>(pairs: Versioned<T>[] | undefined, id: string): T | undefined {
  const pair = pairs?.find((p) => p.after.id === id);
  return pair && committedRecord(pair);
}

/** Declares a reconciler with its types checked together (its snapshot, effect and effect result). */
export const defineReconciler = <const K extends string, S, E = never, R = never>(reconciler: Reconciler<K, S, E, R>): Reconciler<K, S, E, R> => reconciler;

/** The records one committed change wrote, by kind. */
const written: { [K in RecordKind]: (change: Change) => Versioned<RecordTypes[K]>[] } = {
  machine: (change) => change.machines ?? [],
  instance: (change) => change.instances ?? [],
  'meta-instance': (change) => change.metaInstances ?? [],
  'roster-bucket': (change) => change.rosterBuckets ?? [],
  'stale-check': (change) => change.staleChecks ?? [],
  maintenance: (change) => change.maintenances ?? [],
  reservation: (change) => change.reservations ?? [],
};

export const recordKinds = Object.keys(written) as RecordKind[];

export const isRecordKind = (value: unknown): value is RecordKind => typeof value === 'string' && value in written;

export type Registry = ReturnType<typeof createRegistry>;

/** Everything derived from a list of reconcilers: lookups, what a change concerns, due times, watched records. */
export function createRegistry(reconcilers: readonly Reconciler[]) {
  const byKind = new Map(reconcilers.map((reconciler) => [reconciler.kind, reconciler]));
  if (byKind.size !== reconcilers.length) throw new Error('two reconcilers share a kind');

  function collect<K extends RecordKind>(
    refs: Map<string, Ref>,
    kind: K,
    before: RecordTypes[K] | null,
    after: RecordTypes[K] | null,
    id: string,
  ): Map<string, Ref> {
    for (const reconciler of reconcilers) {
      const watch = reconciler.watches[kind] as Watch<RecordTypes[K]> | undefined;
      for (const concerned of watch?.concerns(before, after, id) ?? []) {
        if (!concerned) continue;
        const ref: Ref = typeof concerned === 'string' ? { entity: reconciler.kind, id: concerned } : { entity: reconciler.kind, ...concerned };
        const key = `${reconciler.kind}#${ref.id}`;
        if (!refs.has(key) || ref.related) refs.set(key, ref);
      }
    }
    return refs;
  }

  return {
    reconcilers,
    has: (entity: string) => byKind.has(entity),
    reconcilerOf(entity: string): Reconciler {
      const reconciler = byKind.get(entity);
      if (!reconciler) throw new Error(`no reconciler of kind ${entity}`);
      return reconciler;
    },
    /** The entities a changed record concerns, each once. */
    concernedBy: <K extends RecordKind>(kind: K, before: RecordTypes[K] | null, after: RecordTypes[K] | null, id: string): Ref[] => [
      ...collect(new Map(), kind, before, after, id).values(),
    ],
    /** What a committed change concerns, each once: every record it wrote, as if the stream had delivered it. */
    concernedByChange(change: Change): Ref[] {
      const refs = new Map<string, Ref>();
      for (const kind of recordKinds) for (const pair of written[kind](change)) collect(refs, kind, pair.before, pair.after, pair.after.id);
      return [...refs.values()];
    },
    /** The earliest time any watcher wants to look at this record again, for the due index. */
    dueAtOf<K extends RecordKind>(kind: K, record: RecordTypes[K]): string | undefined {
      const times = reconcilers.map((r) => (r.watches[kind] as Watch<RecordTypes[K]> | undefined)?.dueAt?.(record)).filter((t): t is string => t !== undefined);
      return times.length > 0 ? times.sort()[0] : undefined;
    },
    /** The record kinds some reconciler watches: what the stream must deliver. */
    watchedRecordKinds: recordKinds.filter((kind) => reconcilers.some((r) => r.watches[kind])),
  };
}
