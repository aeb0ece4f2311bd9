import { inAllocatableIndex } from '#domain/core/health.ts';
import type { Machine, MetaInstance } from '#domain/core/model.ts';
import { ageMs } from '#domain/core/time.ts';
import type { AppContext } from '#runtime/context.ts';
import { defineReconciler } from '#reconcilers/reconciler.ts';

// The queue of meta-instances waiting for machines of one type (the entity's id is the machine type). A machine of
// that type freed up, or a replacement slot opened, wakes the longest-waiting few that could use what is free, in
// the order they started waiting.

/** How many waiting meta-instances one wake starts: each reads the type's free machines, so not the whole queue. */
const WAKE_LIMIT = 5;
/**
 * Waiting meta-instances one wake looks through (one Query) for those it can start. Waiters that nothing free now
 * could place (a group larger than the free machines, one in backoff) are passed over: taking the first few
 * whatever they wait for let five such waiters keep every younger one waiting for the sweep.
 */
const WAIT_PAGE = 50;

export interface WaitQueueSnapshot {
  /** The longest-waiting, in order (up to WAIT_PAGE). */
  waiting: MetaInstance[];
  /** Free machines of the type in the shared pool, counted up to the largest need among `waiting`. */
  free: number;
  /** Free machines of the type each waiting org's reservations hold, counted the same way (orgs with none absent). */
  reservedFree: Map<string, number>;
  now: Date;
  /** Wakes of this queue before this one (in this process). */
  turn: number;
}

/**
 * The fewest free machines the meta-instance's next placement takes: minNodes less every member its record lists.
 * Never more than it really needs (some listed members may have failed), so passing over a waiter whose need is
 * larger than what is free never passes over one that could be placed.
 */
export const leastNeed = (meta: MetaInstance): number => Math.max(0, meta.minNodes - meta.memberIds.length);

/** Backing off after failures until `nextAttemptAt`: its due time brings it back, a wake would decide nothing. */
const backingOff = (meta: MetaInstance, now: Date): boolean => meta.nextAttemptAt !== undefined && ageMs(now, meta.nextAttemptAt) < 0;

/** Of each wake, the longest-waiting ones it always starts; the rest of WAKE_LIMIT go round the others in turn. */
const WAKE_FIRST = 2;

/**
 * The waiters a wake starts: of those not backing off whose least need the free machines cover, the WAKE_FIRST
 * longest-waiting, then the others in turn from where the wake before left off (`turn`, the wakes before). Free
 * machines in the wrong places (a group that needs them in one rack) cannot be told from a count, so a waiter that
 * cannot use them would otherwise be woken first every time, and one behind it that could, never.
 */
export function wakeable({ waiting, free, reservedFree, now, turn }: WaitQueueSnapshot): MetaInstance[] {
  const eligible = waiting.filter((meta) => !backingOff(meta, now) && leastNeed(meta) <= free + (reservedFree.get(meta.org) ?? 0));
  if (eligible.length <= WAKE_LIMIT) return eligible;
  const others = eligible.slice(WAKE_FIRST);
  const each = WAKE_LIMIT - WAKE_FIRST;
  const start = (turn * each) % others.length;
  return [...eligible.slice(0, WAKE_FIRST), ...[...others.slice(start), ...others.slice(0, start)].slice(0, each)];
}

/** Wakes of each type in this process: where the next wake's round of the queue starts. */
const wakes = new Map<string, number>();

const freedByHeartbeat = (before: Machine, after: Machine): boolean =>
  before.machineType !== after.machineType ||
  before.heartbeatLive !== after.heartbeatLive ||
  before.lastHeartbeatAt !== after.lastHeartbeatAt ||
  before.heartbeatStaleAt !== after.heartbeatStaleAt ||
  before === after;

export const waitQueueReconciler = defineReconciler({
  kind: 'wait-queue',
  watches: {
    // A machine that became free for placement: it entered the allocatable index, or, in it, its heartbeat came
    // back. A change to a machine that was free before and is still (labels, a cleared override of no effect) frees
    // nothing.
    machine: {
      concerns: (before, after) =>
        after && inAllocatableIndex(after) && (!before || !inAllocatableIndex(before) || freedByHeartbeat(before, after)) ? [after.machineType] : [],
    },
    // A replacement that finished provisioning frees a slot under the site's replacement cap.
    instance: {
      concerns: (before, after) => (after?.replacement && before?.status === 'Provisioning' && after.status !== 'Provisioning' ? [after.machineType] : []),
    },
  },

  async load(ctx: AppContext, machineType: string): Promise<WaitQueueSnapshot> {
    const now = ctx.clock.now();
    const waiting = await ctx.store.waitingMetaInstances(machineType, WAIT_PAGE);
    const needs = waiting.filter((meta) => !backingOff(meta, now)).map(leastNeed);
    const most = Math.max(0, ...needs);
    // Keys only, and no further than the largest need: a free pool is counted in its first rack or two.
    const free = most === 0 ? 0 : (await ctx.store.allocatableMachineIds(machineType, most)).length;
    const short = [...new Set(waiting.filter((meta) => !backingOff(meta, now) && leastNeed(meta) > free).map((meta) => meta.org))];
    const reserved = await Promise.all(
      short.map(async (org) => [org, (await ctx.store.allocatableMachineIds(machineType, most, undefined, org)).length] as const),
    );
    const turn = wakes.get(machineType) ?? 0;
    wakes.set(machineType, turn + 1);
    return { waiting, free, reservedFree: new Map(reserved.filter(([, n]) => n > 0)), now, turn };
  },

  decide: (snapshot: WaitQueueSnapshot) => ({ enqueue: wakeable(snapshot).map((meta) => ({ entity: 'meta-instance', id: meta.id })) }),
});
