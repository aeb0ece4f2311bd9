import type { Instance, Machine } from '#domain/core/model.ts';
import { preventingSources } from '#domain/core/health.ts';
import {
  capacityChange,
  capacityShardOf,
  endedHolds,
  entriesNow,
  feedMovesNow,
  orgShardRef,
  reservationOf,
  type CapacitySnapshot,
} from '#domain/capacity/org-capacity.ts';
import { iso } from '#domain/core/time.ts';
import type { AppContext } from '#runtime/context.ts';
import { defineReconciler, fellDue, roomFor } from '#reconcilers/reconciler.ts';

// Keeps tenant orgs' capacity (domain/capacity/org-capacity.ts) in step with machines and the instances on them. An id is a
// machine id; machines of one counter shard are reconciled together, so a burst of changes costs a transaction per
// batch, and batches of one shard never race each other within a run.

/** What capacity counts of a machine, but for its instance's status and labels (the instance watch covers those). */
const capacityView = (machine: Machine): string =>
  JSON.stringify([
    machine.instanceId,
    reservationOf(machine),
    machine.machineType,
    preventingSources(machine.healthOverrides),
    machine.cleanup?.phase === 'failed',
    machine.heartbeatLive,
    machine.lastHeartbeatAt,
    machine.retired !== undefined,
  ]);

const delivered = (machine: Machine | null): boolean => machine !== null && (machine.instanceId !== undefined || reservationOf(machine) !== undefined);

/**
 * A batch's machines with their node items and counters: one node and up to two counter items each (old org, new
 * org), and per capacity-events entry the entry and its event. What does not fit one transaction waits for the next
 * pass (domain/capacity/org-capacity.ts `capacityChange`).
 */
const BATCH_MACHINES = 40;

export const orgCapacityReconciler = defineReconciler({
  kind: 'org-capacity',
  settlesOrFails: true,
  watches: {
    machine: {
      concerns: (before, after, id) => {
        if (before === null && after === null) return [id];
        if (!delivered(before) && !delivered(after)) return [];
        if (before && after && !fellDue(before, after) && capacityView(before) === capacityView(after)) return [];
        return [id];
      },
    },
    instance: {
      concerns: (before, after) => {
        const instance = after ?? before;
        if (!instance) return [];
        const project = (i: Instance | null) => i?.labels.project;
        const changed = before === null || after === null || fellDue(before, after) || before.status !== after.status || project(before) !== project(after);
        return changed ? [instance.machineId] : [];
      },
    },
  },
  batch: {
    groupOf: (id: string) => String(capacityShardOf(id)),
    room: roomFor(BATCH_MACHINES),
    load: loadCapacity,
  },
  load: (ctx: AppContext, id: string) => loadCapacity(ctx, [id]),
  /**
   * A lost race (another run's batch of the same shard, or of the same org's feed) looks again at once: nothing else
   * would bring these back. So do machines that did not fit this change's transaction.
   */
  decide(snapshot: CapacitySnapshot) {
    const { change, deferred } = capacityChange(snapshot);
    return {
      ...(change ? { change, retryIfLost: true } : {}),
      ...(deferred.length > 0 ? { requeueAt: new Date(snapshot.now) } : {}),
    };
  },
});

/**
 * The node items first, then the machines with the counter shards the nodes name, then their instances with the
 * shards their reservations add, then any shard an instance's org adds: three reads, four when a machine changed org;
 * and the feed heads of the orgs whose capacity-events feed gets entries (one Query each), only then. A node is read
 * alone and before its machine: a batch read is not isolated, so a machine read beside its node could be older than
 * a node another reaction wrote in between, and the node's version guard would let that older machine be written back.
 */
async function loadCapacity(ctx: AppContext, ids: string[]): Promise<CapacitySnapshot | null> {
  const machineIds = [...new Set(ids)];
  const { nodes } = await ctx.store.getCapacityItems({ nodes: machineIds });
  const shardsOf = (entries: Iterable<[string, { org: string } | null | undefined]>) =>
    [...entries].flatMap(([machineId, owner]) => (owner ? [{ org: owner.org, shard: capacityShardOf(machineId) }] : []));
  const ofNodes = shardsOf([...nodes].map(([id, node]) => [id, node.entry]));
  const first = await ctx.store.getCapacityItems({ machines: machineIds, shards: ofNodes });
  const shards = new Map(first.shards.map((s) => [orgShardRef(s.org, s.shard), s]));
  const known = [...ofNodes, ...shardsOf([...first.machines].map(([id, machine]) => [id, reservationOf(machine)]))];
  const unread = (wanted: Array<{ org: string; shard: number }>, read: Array<{ org: string; shard: number }>) =>
    wanted.filter(({ org, shard }) => !shards.has(orgShardRef(org, shard)) && !read.some((r) => r.org === org && r.shard === shard));
  const named = [...first.machines.values()].flatMap((m) => (m.instanceId ? [m.instanceId] : []));
  const instanceIds = [...new Set([...named, ...endedHolds(first.machines, nodes)])];
  const second = await ctx.store.getCapacityItems({ instances: instanceIds, shards: unread(known, ofNodes) });
  for (const s of second.shards) shards.set(orgShardRef(s.org, s.shard), s);
  const snapshot = { machineIds, machines: first.machines, instances: second.instances, nodes };
  const wanted = [...known, ...shardsOf(entriesNow(snapshot))];
  const missing = unread(wanted, known);
  if (missing.length > 0) for (const s of (await ctx.store.getCapacityItems({ shards: missing })).shards) shards.set(orgShardRef(s.org, s.shard), s);
  const feedOrgs = [...feedMovesNow(snapshot).values()].flatMap((moves) => moves.map((move) => move.org));
  return {
    ...snapshot,
    shards: new Map(wanted.map(({ org, shard }) => [orgShardRef(org, shard), shards.get(orgShardRef(org, shard)) ?? null])),
    feedHeads: feedOrgs.length > 0 ? await ctx.store.capacityFeedHeads(feedOrgs) : new Map(),
    now: iso(ctx.clock.now()),
  };
}
