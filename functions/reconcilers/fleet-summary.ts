import {
  counterItemOf,
  rackRef,
  shardOf,
  shardRef,
  summaryChange,
  summaryEntry,
  type Placement,
  type SummarySnapshot,
} from '#domain/machines/fleet-summary.ts';
import type { Machine } from '#domain/core/model.ts';
import type { AppContext } from '#runtime/context.ts';
import { defineReconciler, fellDue, type BatchRoom } from '#reconcilers/reconciler.ts';

// Keeps the fleet summary's aggregates (domain/machines/fleet-summary.ts) in step with the machine records. An id is a
// placement: a machine with the type and rack it is counted under (bring its entry there up to date), or was
// counted under before it was re-described (take its entry out there). Placements of one counter shard are
// reconciled together, so a burst of machine changes (a roster walk, a registration) costs one transaction per
// shard and batch rather than one per machine, all of them contending for the same few shard items.

const placementId = ({ machineId, machineType, rack }: Placement): string => JSON.stringify([machineId, machineType, rack]);

/** A placement id, or a bare machine id (a record without images): its placement is read from the machine. */
function parsePlacement(id: string): Placement | string {
  if (!id.startsWith('[')) return id;
  const [machineId, machineType, rack] = JSON.parse(id) as [string, string, string];
  return { machineId, machineType, rack };
}

const placementOf = (machine: Machine): Placement => ({ machineId: machine.id, machineType: machine.machineType, rack: machine.rack });

/** What the summary keeps of a machine, but for the version stamp. */
const entryOf = (machine: Machine): string => {
  const { version: _version, ...entry } = summaryEntry(machine);
  return JSON.stringify(entry);
};

/** A transaction's limit: a batch's racks plus counter items. */
const MAX_ITEMS = 100;
/** Placements per batch whatever their racks, so that a batch's load stays a few reads: racks of 10 fill one. */
const MAX_PLACEMENTS = 1_000;

/**
 * A batch takes placements while the racks and counter items they touch fit one transaction; a placement of a rack
 * it holds always fits, so a rack's machines gather in one batch, whatever order they come in (a roster walk's
 * chunk spans racks), and the rack is written once. A bare machine id's rack is unknown until loaded: room for one of each.
 */
function summaryBatchRoom(): BatchRoom {
  const racks = new Set<string>();
  const counters = new Set<string>();
  let bare = 0;
  let placements = 0;
  const items = () => racks.size + counters.size + 2 * bare;
  return {
    admit(id) {
      if (placements === MAX_PLACEMENTS) return false;
      const placement = parsePlacement(id);
      if (typeof placement === 'string') {
        if (items() + 2 > MAX_ITEMS) return false;
        bare += 1;
      } else {
        const rack = rackRef(placement.machineType, placement.rack);
        const counter = shardRef(placement.machineType, counterItemOf(placement.rack));
        if (items() + (racks.has(rack) ? 0 : 1) + (counters.has(counter) ? 0 : 1) > MAX_ITEMS) return false;
        racks.add(rack);
        counters.add(counter);
      }
      placements += 1;
      return true;
    },
  };
}

export const fleetSummaryReconciler = defineReconciler({
  kind: 'fleet-summary',
  settlesOrFails: true,
  watches: {
    machine: {
      // A change that leaves the machine's entry as it was but for its version (a cleanup's claim, a label) leaves
      // the rack item and the counters as they are: not a concern. The entry's version only orders the changes that
      // do change them (a reservation taken or released changes the entry alone).
      concerns: (before, after, id) => {
        const placements = [after ?? before, before].filter((m): m is Machine => m !== null).map((m) => placementId(placementOf(m)));
        if (placements.length === 0) return [id];
        if (before && after && !fellDue(before, after) && placements[0] === placements[1] && entryOf(before) === entryOf(after)) return [];
        return new Set(placements);
      },
    },
  },
  batch: {
    room: summaryBatchRoom,
    groupOf: (id: string) => {
      const placement = parsePlacement(id);
      return typeof placement === 'string' ? 'unplaced' : shardRef(placement.machineType, shardOf(placement.rack));
    },
    load: loadPlacements,
  },

  load: (ctx: AppContext, id: string) => loadPlacements(ctx, [id]),

  /**
   * A lost race (another batch of the same shard) looks again at once: nothing else would bring these back. A
   * commit leaves nothing more to do: a machine that changed since it was read is another stream record.
   */
  decide(snapshot: SummarySnapshot) {
    const change = summaryChange(snapshot);
    return change ? { change, retryIfLost: true } : {};
  },
});

/**
 * The placements' machines, racks and counter items. Placement ids name their type and rack, so all of it is one batch
 * read; only bare machine ids (records without images) need their machines read first.
 */
async function loadPlacements(ctx: AppContext, ids: string[]): Promise<SummarySnapshot | null> {
  const parsed = ids.map(parsePlacement);
  const bare = [...new Set(parsed.filter((p): p is string => typeof p === 'string'))];
  const bareMachines = bare.length > 0 ? await ctx.store.getMachines(bare) : new Map<string, Machine>();
  const placements = parsed.flatMap((p) => {
    if (typeof p !== 'string') return [p];
    const machine = bareMachines.get(p);
    return machine ? [placementOf(machine)] : [];
  });
  if (placements.length === 0) return null;
  const racks = new Map(placements.map((p) => [rackRef(p.machineType, p.rack), { machineType: p.machineType, rack: p.rack }]));
  const shards = new Map(placements.map((p) => [shardRef(p.machineType, counterItemOf(p.rack)), { machineType: p.machineType, shard: counterItemOf(p.rack) }]));
  const placed = [...new Set(placements.map((p) => p.machineId))].filter((id) => !bareMachines.has(id));
  const stored = await ctx.store.getSummaryItems([...racks.values()], [...shards.values()], placed);
  const machines = new Map([...bareMachines, ...stored.machines]);
  const storedRacks = new Map(stored.racks.map((r) => [rackRef(r.machineType, r.rack), r]));
  const storedShards = new Map(stored.shards.map((s) => [shardRef(s.machineType, s.shard), s]));
  return {
    placements,
    machines: new Map(placements.map((p) => [p.machineId, machines.get(p.machineId) ?? null])),
    racks: new Map([...racks.keys()].map((ref) => [ref, storedRacks.get(ref) ?? null])),
    shards: new Map([...shards.keys()].map((ref) => [ref, storedShards.get(ref) ?? null])),
  };
}
