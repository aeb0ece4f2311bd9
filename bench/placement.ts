// How long deciding placements for 1,000 meta-instances on a 10,000-machine fleet with part-used racks takes, and
// whether any decision reports a placement error while the fleet has room.
// No DynamoDB: each decision reads its candidates through the service's own loader (loadCandidates) from in-memory
// allocatable indexes ordered as the store orders them (rack, then id; NVLink domain, then id), and is checked
// against a decision that sees every free machine of the type.

import type { HeartbeatView } from '#domain/core/health.ts';
import { inAllocatableIndex } from '#domain/core/health.ts';
import {
  newMetaInstance,
  noReplacements,
  reconcileMetaInstance,
  type MetaDecision,
  type MetaRules,
  type MetaSnapshot,
} from '#domain/meta-instances/meta-instances.ts';
import type { HealthOverride, Machine, MetaInstance } from '#domain/core/model.ts';
import { CANDIDATE_PAGE, loadCandidates, type CandidateReader } from '#runtime/meta-instance-snapshot.ts';
import { percentile, ratio, round } from './stats.ts';
import { seededRandom } from '#local/stream-chaos.ts';

export interface PlacementOptions {
  machines: number;
  metaInstances: number;
  warmupPasses: number;
  passes: number;
}

export const defaultPlacementOptions: PlacementOptions = { machines: 10_000, metaInstances: 1_000, warmupPasses: 2, passes: 5 };

/** The goal: all 1,000 decisions in under a second. */
const GOAL_ALL_DECISIONS_MS = 1_000;

/**
 * Four types, their share of the fleet and of the requests, their rack size and NVLink domain size: gb200 in small
 * racks (1,000 of them on 10,000 machines) that make up NVLink domains of 18 (six racks each), mi300x asked for
 * beyond what it has, so some wait.
 */
const TYPES: Array<{ type: string; fleet: number; demand: number; rackSize: number; domainSize?: number }> = [
  { type: 'gb200', fleet: 0.3, demand: 0.25, rackSize: 3, domainSize: 18 },
  { type: 'h100', fleet: 0.35, demand: 0.25, rackSize: 20 },
  { type: 'b200', fleet: 0.25, demand: 0.2, rackSize: 8 },
  { type: 'mi300x', fleet: 0.1, demand: 0.3, rackSize: 20 },
];
/** The first racks of each type (in index order) are part-used: all but one machine hold an instance. */
const PART_USED_RACKS = 0.7;
/** minNodes drawn from this list (mean 4.7); sameRack for half of them, or on a type with domains sameNvlinkDomain for a third. */
const MIN_NODES = [1, 1, 1, 2, 2, 4, 4, 8, 8, 16];
const NOW = new Date('2030-01-01T00:00:00.000Z');
const AT = NOW.toISOString();
const STALE_AT = new Date(NOW.getTime() - 600_000).toISOString();

const degraded = (id: string): HealthOverride => ({
  source: 'degraded',
  mode: 'merge',
  alerts: [{ id: 'Degraded', target: id, message: 'bench', classifications: ['PreventAllocations'] }],
  createdBy: 'bench',
  createdAt: AT,
});

/**
 * The fleet: each type in racks of its size (and NVLink domains of its domain size), the first 70% of its racks (in
 * index order) part-used (one machine free, the others holding instances), so its first domains are part-used too;
 * the rest free; 3% carry a preventing override (out of the allocatable index) and 1% have a stale heartbeat (in the
 * index, which is time-independent, but filtered out by the decision).
 */
export function buildFleet(count: number, rand: () => number): Machine[] {
  const machines: Machine[] = [];
  for (const { type, fleet, rackSize, domainSize } of TYPES) {
    const n = Math.round(count * fleet);
    const partUsedRacks = Math.round((n / rackSize) * PART_USED_RACKS);
    for (let i = 0; i < n; i++) {
      const rackNumber = Math.floor(i / rackSize);
      const rack = `${type}-r${String(rackNumber + 1).padStart(4, '0')}`;
      const id = `${rack}-${String((i % rackSize) + 1).padStart(2, '0')}`;
      const used = rackNumber < partUsedRacks && i % rackSize !== 0;
      const roll = rand();
      machines.push({
        id,
        machineType: type,
        rack,
        ...(domainSize ? { nvlinkDomain: `${type}-nvl${String(Math.floor(i / domainSize) + 1).padStart(4, '0')}` } : {}),
        ...(used ? { state: 'Assigned' as const, instanceId: `i-held-${id}` } : { state: 'Ready' as const }),
        labels: {},
        healthOverrides: roll < 0.03 ? [degraded(id)] : [],
        heartbeatLive: !(roll >= 0.03 && roll < 0.04),
        ...(roll >= 0.03 && roll < 0.04 ? { lastHeartbeatAt: STALE_AT } : {}),
        version: 1,
        createdAt: AT,
        updatedAt: AT,
      });
    }
  }
  return machines;
}

interface Request {
  meta: MetaInstance;
}

function buildRequests(count: number, fleet: Machine[], rand: () => number): Request[] {
  const byType = new Map<string, Machine[]>();
  for (const m of fleet) {
    if (!byType.has(m.machineType)) byType.set(m.machineType, []);
    byType.get(m.machineType)!.push(m);
  }
  const requests: Request[] = [];
  for (let i = 0; i < count; i++) {
    let roll = rand();
    const { type, rackSize, domainSize } = TYPES.find((t) => (roll -= t.demand) < 0) ?? TYPES[0]!;
    const drawn = MIN_NODES[Math.floor(rand() * MIN_NODES.length)]!;
    const together = rand();
    const sameNvlinkDomain = domainSize !== undefined && together < 1 / 3;
    const sameRack = domainSize === undefined ? together < 0.5 : together >= 2 / 3;
    // The API refuses a group larger than the type's racks or domains (422 unsatisfiable): none is asked for.
    const minNodes = sameRack ? Math.min(drawn, rackSize) : sameNvlinkDomain ? Math.min(drawn, domainSize) : drawn;
    // One in twenty pins a machine: some of those are taken or unhealthy by then, and say so.
    const pin = rand() < 0.05 ? byType.get(type)![Math.floor(rand() * byType.get(type)!.length)]!.id : undefined;
    const meta = newMetaInstance(
      `mi-${String(i).padStart(4, '0')}`,
      `org-${i % 50}`,
      { machineType: type, minNodes, machineIds: pin ? [pin] : undefined, placement: { sameRack, sameNvlinkDomain }, labels: {} },
      'bench',
      NOW,
    );
    requests.push({ meta });
  }
  return requests;
}

const rules: MetaRules = { maxConsecutiveFailures: 3, backoffBaseMs: 5_000, backoffMaxMs: 600_000, maxReplacementsInFlight: 5 };
const heartbeat: HeartbeatView = { rosterSeenAt: new Date(NOW.getTime() - 1_000).toISOString(), timeoutMs: 30_000 };

interface PassResult {
  totalMs: number;
  /** Time of each meta-instance's decision (loading its candidates and deciding), µs. */
  decisionsUs: number[];
  /** Candidates each decision read. */
  candidatesRead: number[];
  /** Reads of the allocatable index each decision made. */
  reads: number[];
  placed: number;
  machinesClaimed: number;
  errors: Record<string, number>;
  /** Meta-instances that got a placement error while a decision seeing every free machine of the type places them. */
  falseErrorIds: Set<string>;
  other: number;
}

/** A type's free machines as its two allocatable indexes order them: by rack, and (those with one) by NVLink domain. */
interface FreeIndex {
  byRack: Machine[];
  byDomain: Machine[];
}

/** How a variant gets a decision's candidates from the type's free machines (ordered as the indexes are). */
type LoadVariant = (snapshot: MetaSnapshot, pool: FreeIndex, counted: { reads: number }) => Promise<Machine[]>;

/** The allocatable indexes of one type in memory, as the store pages them (offsets as tokens; a rack or domain read alone). */
function readerOf(pool: FreeIndex, counted: { reads: number }): CandidateReader {
  return async ({ limit, nextToken, rack, nvlinkDomain, byNvlinkDomain }) => {
    counted.reads++;
    if (rack !== undefined) return { items: pool.byRack.filter((m) => m.rack === rack).slice(0, limit) };
    if (nvlinkDomain !== undefined) return { items: pool.byDomain.filter((m) => m.nvlinkDomain === nvlinkDomain).slice(0, limit) };
    const ordered = byNvlinkDomain ? pool.byDomain : pool.byRack;
    const from = nextToken === undefined ? 0 : Number(nextToken);
    return { items: ordered.slice(from, from + limit), nextToken: from + limit < ordered.length ? String(from + limit) : undefined };
  };
}

export const variants: Record<'as_the_service_loads_them' | 'first_page_only' | 'whole_type', LoadVariant> = {
  /** reconcilers/meta-instance.ts loadCandidates: what it needs, rack by rack. */
  as_the_service_loads_them: (snapshot, pool, counted) => loadCandidates(snapshot, readerOf(pool, counted)),
  /** One fixed page: the first 500 free machines of the type, whatever the decision needs (the baseline for false errors). */
  first_page_only: async (_snapshot, pool, counted) => {
    counted.reads++;
    return pool.byRack.slice(0, CANDIDATE_PAGE);
  },
  whole_type: async (_snapshot, pool) => pool.byRack,
};

const claimsOf = (decision: MetaDecision): Machine[] =>
  decision.kind === 'commit' ? (decision.change.machines ?? []).map((v) => v.after).filter((m) => m.state === 'Assigned') : [];

const byKey = (key: (m: Machine) => string) => (a: Machine, b: Machine) => {
  const [ka, kb] = [key(a), key(b)];
  return ka === kb ? (a.id < b.id ? -1 : 1) : ka < kb ? -1 : 1;
};

/** Free machines of each type in the allocatable indexes, ordered as the indexes order them: rack (or domain), then id. */
function indexOf(fleet: Machine[]): Map<string, FreeIndex> {
  const free = new Map<string, FreeIndex>();
  const allocatable = fleet.filter(inAllocatableIndex);
  for (const m of [...allocatable].sort(byKey((m) => m.rack))) {
    if (!free.has(m.machineType)) free.set(m.machineType, { byRack: [], byDomain: [] });
    free.get(m.machineType)!.byRack.push(m);
  }
  for (const m of allocatable.filter((m) => m.nvlinkDomain !== undefined).sort(byKey((m) => m.nvlinkDomain!))) free.get(m.machineType)!.byDomain.push(m);
  return free;
}

/**
 * One pass: the requests in order, each decided on a snapshot whose candidates the variant loads from its type's
 * free machines, shared by all and shrinking as machines are claimed. Loading and deciding are timed together;
 * the check against a decision on every free machine of the type is not.
 */
async function pass(fleet: Machine[], requests: Request[], load: LoadVariant): Promise<PassResult> {
  const current = new Map(fleet.map((m) => [m.id, m]));
  const free = indexOf(fleet);
  let ids = 0;
  const result: PassResult = {
    totalMs: 0,
    decisionsUs: [],
    candidatesRead: [],
    reads: [],
    placed: 0,
    machinesClaimed: 0,
    errors: {},
    falseErrorIds: new Set(),
    other: 0,
  };
  for (const { meta } of requests) {
    const pool = free.get(meta.machineType) ?? { byRack: [], byDomain: [] };
    const snapshot: MetaSnapshot = {
      meta,
      members: [],
      replacements: noReplacements,
      candidates: [],
      pinned: new Map((meta.machineIds ?? []).map((id) => [id, current.get(id) ?? null])),
      heartbeat,
      now: NOW,
      rules,
      newInstance: () => {
        const id = `i-${++ids}`;
        return { id, org: meta.org, name: id, labels: {}, clientToken: `ct-${ids}`, createdBy: `meta-instance:${meta.id}` };
      },
    };
    const counted = { reads: 0 };
    const t0 = performance.now();
    const candidates = await load(snapshot, pool, counted);
    const decision = reconcileMetaInstance({ ...snapshot, candidates });
    const dt = performance.now() - t0;
    result.totalMs += dt;
    result.decisionsUs.push(dt * 1000);
    result.candidatesRead.push(candidates.length);
    result.reads.push(counted.reads);

    if (decision.kind !== 'commit') {
      result.other++;
      continue;
    }
    const claimed = claimsOf(decision);
    const after = decision.change.metaInstances?.find((v) => v.after.id === meta.id)?.after;
    if (claimed.length > 0) {
      result.placed++;
      result.machinesClaimed += claimed.length;
      const taken = new Set(claimed.map((m) => m.id));
      for (const m of claimed) current.set(m.id, m);
      free.set(meta.machineType, { byRack: pool.byRack.filter((m) => !taken.has(m.id)), byDomain: pool.byDomain.filter((m) => !taken.has(m.id)) });
    } else if (after?.placementError) {
      // Grouped by the kind of message (the numbers in it vary).
      const kind = after.placementError.replace(/\b[a-z0-9]+-r\d+-\d+\b/g, '<machine>').replace(/\b\d+\b/g, 'N');
      result.errors[kind] = (result.errors[kind] ?? 0) + 1;
      if (claimsOf(reconcileMetaInstance({ ...snapshot, candidates: pool.byRack })).length > 0) result.falseErrorIds.add(meta.id);
    } else {
      result.other++;
    }
  }
  return result;
}

const median = (values: number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  );

async function measure(fleet: Machine[], requests: Request[], load: LoadVariant, options: PlacementOptions) {
  for (let i = 0; i < options.warmupPasses; i++) await pass(fleet, requests, load);
  const passes: PassResult[] = [];
  for (let i = 0; i < options.passes; i++) passes.push(await pass(fleet, requests, load));
  const decisions = passes.flatMap((p) => p.decisionsUs).sort((a, b) => a - b);
  const totals = passes.map((p) => p.totalMs).sort((a, b) => a - b);
  const first = passes[0]!;
  const errors = Object.values(first.errors).reduce((s, n) => s + n, 0);
  return {
    total: {
      unit: 'ms to decide all meta-instances once (sum of the load + decide times), over the measured passes',
      median: round(percentile(totals, 50)),
      min: round(totals[0]!),
      max: round(totals.at(-1)!),
    },
    per_decision: {
      unit: 'µs per decision (loadCandidates from the in-memory index, then reconcileMetaInstance), all measured passes pooled',
      samples: decisions.length,
      median: round(percentile(decisions, 50), 1),
      p99: round(percentile(decisions, 99), 1),
      max: round(decisions.at(-1)!, 1),
      mean: round(decisions.reduce((s, x) => s + x, 0) / decisions.length, 1),
    },
    reads_per_decision: {
      unit: 'reads of the allocatable index, candidates read (one pass)',
      reads_median: median(first.reads),
      reads_max: Math.max(...first.reads),
      candidates_median: median(first.candidatesRead),
      candidates_max: Math.max(...first.candidatesRead),
    },
    outcomes: {
      placed: first.placed,
      machines_claimed: first.machinesClaimed,
      errors,
      error_kinds: first.errors,
      false_placement_errors: first.falseErrorIds.size,
      other: first.other,
      same_in_every_pass: passes.every(
        (p) => p.placed === first.placed && p.machinesClaimed === first.machinesClaimed && p.falseErrorIds.size === first.falseErrorIds.size,
      ),
    },
  };
}

export async function placementBench(options: PlacementOptions = defaultPlacementOptions) {
  const started = performance.now();
  const fleet = buildFleet(options.machines, seededRandom(7));
  const requests = buildRequests(options.metaInstances, fleet, seededRandom(11));
  const types = Object.fromEntries(
    TYPES.map(({ type, rackSize, domainSize }) => {
      const ofType = fleet.filter((m) => m.machineType === type);
      const racks = new Set(ofType.map((m) => m.rack));
      return [
        type,
        {
          machines: ofType.length,
          rack_size: rackSize,
          racks: racks.size,
          part_used_racks: new Set(ofType.filter((m) => m.state === 'Assigned').map((m) => m.rack)).size,
          ...(domainSize
            ? {
                nvlink_domain_size: domainSize,
                nvlink_domains: new Set(ofType.map((m) => m.nvlinkDomain)).size,
                part_used_nvlink_domains: new Set(ofType.filter((m) => m.state === 'Assigned').map((m) => m.nvlinkDomain)).size,
              }
            : {}),
          in_allocatable_index: ofType.filter(inAllocatableIndex).length,
          heartbeat_stale: ofType.filter((m) => !m.heartbeatLive).length,
          requests: requests.filter((r) => r.meta.machineType === type).length,
          nodes_requested: requests.filter((r) => r.meta.machineType === type).reduce((s, r) => s + r.meta.minNodes, 0),
        },
      ];
    }),
  );
  const loaded = await measure(fleet, requests, variants.as_the_service_loads_them, options);
  const firstPage = await measure(fleet, requests, variants.first_page_only, options);
  const whole = await measure(fleet, requests, variants.whole_type, options);
  const allDecisionsMs = loaded.total.median;
  return {
    wall_time: { unit: 's', value: round((performance.now() - started) / 1000, 1) },
    config: {
      machines: fleet.length,
      meta_instances: requests.length,
      part_used_racks: `the first ${PART_USED_RACKS * 100}% of each type's racks in index order hold one free machine, the others instances`,
      types,
      min_nodes_drawn_from: MIN_NODES,
      same_rack: requests.filter((r) => r.meta.placement.sameRack).length,
      same_nvlink_domain: requests.filter((r) => r.meta.placement.sameNvlinkDomain).length,
      pinned: requests.filter((r) => r.meta.machineIds).length,
      candidate_page: CANDIDATE_PAGE,
      warmup_passes: options.warmupPasses,
      measured_passes: options.passes,
      method:
        'no I/O: each meta-instance (new, no members) is decided on a snapshot whose candidates a variant loads from its ' +
        "type's free machines in in-memory allocatable indexes ordered as the store orders them (rack or NVLink domain, then id), shared by all " +
        'and shrinking as machines are claimed; loading and reconcileMetaInstance are timed together (performance.now()), ' +
        'after warm-up passes over the same fleet and requests (seeded, identical every run). A placement error is false when ' +
        'reconcileMetaInstance on every free machine of the type places the same meta-instance at that moment (checked untimed)',
    },
    goals: {
      false_placement_errors: { figure: loaded.outcomes.false_placement_errors, goal: 0, meets_goal: loaded.outcomes.false_placement_errors === 0 },
      all_decisions_ms: {
        figure: allDecisionsMs,
        goal: GOAL_ALL_DECISIONS_MS,
        ratio: ratio(allDecisionsMs, GOAL_ALL_DECISIONS_MS),
        meets_goal: allDecisionsMs < GOAL_ALL_DECISIONS_MS,
      },
    },
    candidates_as_the_service_loads_them: loaded,
    candidates_first_page_only: { note: `the first ${CANDIDATE_PAGE} free machines of the type alone, whatever the decision needs`, ...firstPage },
    candidates_whole_type: whole,
  };
}
