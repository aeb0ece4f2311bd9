import type { Change } from '#domain/core/change.ts';
import type { AppContext } from '#runtime/context.ts';
import type { RecordIds } from '#store/aggregates/records.ts';
import { limiter } from '#store/in-parallel.ts';
import { recordReadyInstances } from '#runtime/create-metrics.ts';
import { forRequest } from '#runtime/request-scope.ts';
import { committedOnce, retryOnStale } from '#runtime/retry-on-stale.ts';
import type { BatchRoom, Reconciler, Ref, Registry } from '#reconcilers/reconciler.ts';
import { registry as defaultRegistry } from '#reconcilers/registry.ts';

/** Most entities reconciled at once in one run: a stream batch holds up to 100 records, a sweep page 200 due. */
export const DEFAULT_CONCURRENCY = 32;

/** Passes of one entity's reconcile that ask to look again at once; one that does not settle is finished by the next trigger. */
export const MAX_PASSES = 6;

export interface RunOptions {
  concurrency?: number;
  registry?: Registry;
}

/** One invocation's work queue (a stream batch, a sweep). */
export interface Run {
  /**
   * Reconcile these entities and whatever they lead to (the entities their commits concern, their decisions'
   * `enqueue`), each entity at most once in this run. Settles when all of that is done; rejects with the first
   * failure among them. `requestId`: the API request whose record changed (the stream reaction's correlation id);
   * what these entities start works for that request too, unless another one started them first.
   */
  reconcile(refs: Ref[], requestId?: string): Promise<void>;
}

interface Entry {
  /** Its own reconcile is over (whatever the outcome). */
  done: Promise<void>;
  /** Its own reconcile and everything this entry was first to start: the first failure, or null. Never rejects. */
  failure: Promise<Failure | null>;
}

interface Failure {
  error: unknown;
}

interface Followers {
  concerned: Ref[];
  enqueued: Ref[];
}

const keyOf = (ref: Ref) => `${ref.entity}#${ref.id}`;

async function firstFailure(failures: Promise<Failure | null>[]): Promise<Failure | null> {
  return (await Promise.all(failures)).find((failure) => failure !== null) ?? null;
}

/**
 * Perform an effect whose claim committed, then commit what its result changes: decided first on the snapshot as
 * the claim left it (when the reconciler can `advance` it; the settle's version guards catch whatever others wrote
 * since), else and after a lost race on state loaded afresh.
 */
async function performEffect(
  ctx: AppContext,
  reconciler: Reconciler,
  id: string,
  effect: unknown,
  related: RecordIds | undefined,
  claimed: { snapshot: unknown; change: Change },
): Promise<Change | null> {
  const effects = reconciler.effects;
  if (!effects) throw new Error(`reconciler ${reconciler.kind} decided an effect it cannot perform`);
  const result = await effects.perform(ctx, effect);
  let advanced = reconciler.advance?.(claimed.snapshot, claimed.change, ctx.clock.now()) ?? null;
  return retryOnStale(async () => {
    if (advanced !== null) {
      // Only a change is taken from it: its commit is what checks the claim's state still holds.
      const change = effects.settle(advanced, effect, result);
      advanced = null;
      if (change) {
        await ctx.store.commit(change);
        return change;
      }
    }
    const fresh = await reconciler.load(ctx, id, related);
    const change = fresh === null ? null : effects.settle(fresh, effect, result);
    if (change) await ctx.store.commit(change);
    return change;
  });
}

/** A decision's separate changes in flight at once. */
export const SEPARATE_IN_FLIGHT = 25;

/** Each change on its own, a few at a time: those that committed, and whether any lost its race. */
async function commitSeparately(ctx: AppContext, changes: Change[]): Promise<{ committed: Change[]; lost: boolean }> {
  const slot = limiter(SEPARATE_IN_FLIGHT);
  const outcomes = await Promise.all(changes.map((change) => slot(() => committedOnce(() => ctx.store.commit(change)))));
  return { committed: changes.filter((_, i) => outcomes[i]), lost: outcomes.includes(false) };
}

/**
 * Load, decide, commit; perform a claimed effect and record its result; again at once while the decision asks to.
 * A lost race ends the pass: the rival's write is another trigger, or the decision asked to look again anyway.
 */
async function reconcileEntity(
  ctx: AppContext,
  registry: Registry,
  reconciler: Reconciler,
  id: string,
  related?: RecordIds,
  load = (hint: RecordIds | undefined) => reconciler.load(ctx, id, hint),
): Promise<Followers> {
  const followers: Followers = { concerned: [], enqueued: [] };
  const committed = (change: Change) => {
    recordReadyInstances(ctx.metrics, change);
    followers.concerned.push(...registry.concernedByChange(change));
  };
  for (let pass = 1; pass <= MAX_PASSES; pass++) {
    const snapshot = await load(related);
    if (snapshot === null) break;
    // What this snapshot names is what a fresh load of the same entity (after the effect, next pass) reads along.
    related = reconciler.relatedOf?.(snapshot) ?? related;
    const decision = reconciler.decide(snapshot);
    followers.enqueued.push(...(decision.enqueue ?? []));
    const separately = await commitSeparately(ctx, decision.separately ?? []);
    separately.committed.forEach(committed);
    const lostRace = separately.lost || (decision.change !== undefined && !(await committedOnce(() => ctx.store.commit(decision.change!))));
    if (decision.change && !lostRace) {
      committed(decision.change);
      if (decision.summary) ctx.log.info('reconciled', { entity: reconciler.kind, id, outcome: decision.summary });
      const settled =
        decision.effect === undefined ? null : await performEffect(ctx, reconciler, id, decision.effect, related, { snapshot, change: decision.change });
      if (settled) committed(settled);
    }
    const again = (lostRace && decision.retryIfLost) || (decision.requeueAt !== undefined && decision.requeueAt.getTime() <= ctx.clock.now().getTime());
    if (!again) break;
    if (lostRace && reconciler.settlesOrFails && pass === MAX_PASSES) throw new Error(`${reconciler.kind} ${id} kept losing races: delivery to be retried`);
    // Rivals on a shared record (an aggregate) would meet again at once: spread the next attempts out.
    if (lostRace) await new Promise((resolve) => setTimeout(resolve, Math.random() * 25 * pass));
  }
  return followers;
}

/** A group's ids gathered for one reconcile (see `Reconciler.batch`), open to more until it gets its turn or is full. */
interface Batch {
  ids: string[];
  room: BatchRoom;
  entry: Entry;
}

/**
 * The entries of a run still going, and a wait for the moment none is: checked again after a turn of the event loop,
 * so that what an entry's end starts (its cascade, the next of an ordered enqueue) counts before the run looks quiet.
 */
function workInFlight() {
  let going = 0;
  let waiting: Array<() => void> = [];
  return {
    counted(entry: Entry): Entry {
      going += 1;
      void entry.done.then(() => {
        going -= 1;
        if (going > 0) return;
        const woken = waiting;
        waiting = [];
        for (const wake of woken) wake();
      });
      return entry;
    },
    async quiet(): Promise<void> {
      for (;;) {
        if (going > 0) await new Promise<void>((resolve) => waiting.push(resolve));
        await new Promise((resolve) => setImmediate(resolve));
        if (going === 0) return;
      }
    },
  };
}

export function startRun(ctx: AppContext, { concurrency = DEFAULT_CONCURRENCY, registry = defaultRegistry }: RunOptions = {}): Run {
  const entries = new Map<string, Entry>();
  const slot = limiter(concurrency);
  /** By reconciler kind and group: the batches still gathering ids, oldest first, and the last one started (the next waits for it). */
  const gathering = new Map<string, Batch[]>();
  const lastOfGroup = new Map<string, Promise<void>>();
  const unbatched = workInFlight();

  const track = (run: Promise<Followers>, scoped: AppContext, failed: Record<string, unknown>): Entry => {
    const failure = run.then(
      ({ concerned, enqueued }) => firstFailure([...startNew(concerned, scoped).map((entry) => entry.failure), serveInOrder(enqueued, scoped)]),
      (error: unknown) => {
        scoped.log.error('reconcile failed', { ...failed, error: String(error) });
        return { error };
      },
    );
    return {
      done: run.then(
        () => undefined,
        () => undefined,
      ),
      failure,
    };
  };

  const start = (ref: Ref, scoped: AppContext): Entry => {
    const reconciler = registry.has(ref.entity) ? registry.reconcilerOf(ref.entity) : undefined;
    const entry = reconciler?.batch
      ? join(reconciler, ref.id, scoped)
      : unbatched.counted(
          track(
            slot(() => reconcileEntity(scoped, registry, reconciler ?? registry.reconcilerOf(ref.entity), ref.id, ref.related)),
            scoped,
            { entity: ref.entity, id: ref.id },
          ),
        );
    entries.set(keyOf(ref), entry);
    return entry;
  };

  /**
   * An id joins the first batch of its group that still has room for it (so a rack's machines, say, gather in the
   * batch that took the first of them, whatever order they come in), or a new batch. A group's batches start one
   * after another, each once the run's unbatched work is done: by then a burst (a roster walk's commits) has
   * gathered whole, in as few batches as their room allows.
   */
  const join = (reconciler: Reconciler, id: string, scoped: AppContext): Entry => {
    const batching = reconciler.batch!;
    const group = `${reconciler.kind}#${batching.groupOf(id)}`;
    const open = gathering.get(group) ?? gathering.set(group, []).get(group)!;
    let batch = open.find((candidate) => candidate.room.admit(id));
    if (!batch) {
      const room = batching.room();
      // A batch takes its first id whatever it is: one id always fits one decision.
      room.admit(id);
      const ids: string[] = [];
      const turn = (lastOfGroup.get(group) ?? Promise.resolve()).then(unbatched.quiet);
      const run = turn.then(() =>
        slot(() => {
          open.splice(open.indexOf(batch!), 1);
          return reconcileEntity(scoped, registry, reconciler, `${group} (${ids.length})`, undefined, () => batching.load(scoped, ids));
        }),
      );
      batch = { ids, room, entry: track(run, scoped, { entity: reconciler.kind, ids }) };
      open.push(batch);
      lastOfGroup.set(group, batch.entry.done);
    }
    batch.ids.push(id);
    return batch.entry;
  };

  /**
   * Only what nobody started yet: waiting on an entry started elsewhere could wait on itself. Checked ref by ref, as
   * each starts: one change concerns the same entity many times (a bucket walk's machines, one machine type).
   */
  const startNew = (refs: Ref[], scoped: AppContext): Entry[] => refs.flatMap((ref) => (entries.has(keyOf(ref)) ? [] : [start(ref, scoped)]));

  /** A decision's `enqueue` is an order (waiting meta-instances, longest-waiting first): each starts after the one before. */
  const serveInOrder = async (refs: Ref[], scoped: AppContext): Promise<Failure | null> => {
    const started: Entry[] = [];
    for (const ref of refs) {
      const [entry] = startNew([ref], scoped);
      if (!entry) continue;
      started.push(entry);
      await entry.done;
    }
    return firstFailure(started.map((entry) => entry.failure));
  };

  return {
    async reconcile(refs, requestId) {
      const scoped = forRequest(ctx, requestId);
      const failure = await firstFailure(refs.map((ref) => (entries.get(keyOf(ref)) ?? start(ref, scoped)).failure));
      if (failure) throw failure.error;
    },
  };
}
