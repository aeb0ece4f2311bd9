// Issue 4, item 7b: how long the pure domain takes to decide placements for 1,000 meta-instances on a 10,000-machine
// fleet. No DynamoDB: the snapshots are built in memory, as the service would load them, and only the decision
// (reconcileMetaInstance) is timed.

import type { HeartbeatView } from '#domain/health.ts';
import { inAllocatableIndex } from '#domain/health.ts';
import { newMetaInstance, reconcileMetaInstance, type MetaRules, type MetaSnapshot } from '#domain/meta-instances.ts';
import type { HealthOverride, Machine, MetaInstance } from '#domain/model.ts';
import { percentile, round } from './stats.ts';

export interface PlacementOptions {
  machines: number;
  metaInstances: number;
  warmupPasses: number;
  passes: number;
  /** Candidates per snapshot, as the service loads them (`allocatableMachines(type, 500)`). */
  candidatePage: number;
}

export const defaultPlacementOptions: PlacementOptions = { machines: 10_000, metaInstances: 1_000, warmupPasses: 2, passes: 5, candidatePage: 500 };

/** Four types, their share of the fleet and of the requests: mi300x is asked for beyond what it has, so some wait. */
const TYPES = [
  { type: 'gb200', fleet: 0.3, demand: 0.25 },
  { type: 'h100', fleet: 0.35, demand: 0.25 },
  { type: 'b200', fleet: 0.25, demand: 0.2 },
  { type: 'mi300x', fleet: 0.1, demand: 0.3 },
];
const RACK_SIZE = 20;
/** minNodes drawn from this list (mean 4.7); sameRack for half of them. */
const MIN_NODES = [1, 1, 1, 2, 2, 4, 4, 8, 8, 16];
const NOW = new Date('2030-01-01T00:00:00.000Z');
const AT = NOW.toISOString();
const STALE_AT = new Date(NOW.getTime() - 600_000).toISOString();

/** A small seeded generator (mulberry32), so every run decides the same fleet and the same requests. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const degraded = (id: string): HealthOverride => ({
  source: 'degraded',
  mode: 'merge',
  alerts: [{ id: 'Degraded', target: id, message: 'bench', classifications: ['PreventAllocations'] }],
  createdBy: 'bench',
  createdAt: AT,
});

/**
 * The fleet: every type in racks of 20; 3% carry a preventing override (out of the allocatable index) and 1% have a
 * stale heartbeat (in the index, which is time-independent, but filtered out by the decision).
 */
export function buildFleet(count: number, rand: () => number): Machine[] {
  const machines: Machine[] = [];
  for (const { type, fleet } of TYPES) {
    const n = Math.round(count * fleet);
    for (let i = 0; i < n; i++) {
      const rack = `${type}-r${String(Math.floor(i / RACK_SIZE) + 1).padStart(3, '0')}`;
      const id = `${rack}-${String((i % RACK_SIZE) + 1).padStart(2, '0')}`;
      const roll = rand();
      machines.push({
        id,
        machineType: type,
        rack,
        state: 'Ready',
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
    const type = (TYPES.find((t) => (roll -= t.demand) < 0) ?? TYPES[0]!).type;
    const minNodes = MIN_NODES[Math.floor(rand() * MIN_NODES.length)]!;
    const sameRack = rand() < 0.5;
    // One in twenty pins a machine: some of those are taken or unhealthy by then, and say so.
    const pin = rand() < 0.05 ? byType.get(type)![Math.floor(rand() * byType.get(type)!.length)]!.id : undefined;
    const meta = newMetaInstance(
      `mi-${String(i).padStart(4, '0')}`,
      `org-${i % 50}`,
      { machineType: type, minNodes, machineIds: pin ? [pin] : undefined, placement: { sameRack }, labels: {} },
      'bench',
      NOW,
    );
    requests.push({ meta });
  }
  return requests;
}

const rules: MetaRules = { maxConsecutiveFailures: 3, backoffBaseMs: 5_000, backoffMaxMs: 600_000, maxReplacementsInFlight: 5, replacementsInFlight: 0 };
const heartbeat: HeartbeatView = { rosterSeenAt: new Date(NOW.getTime() - 1_000).toISOString(), timeoutMs: 30_000 };

interface PassResult {
  totalMs: number;
  /** Decision time of each meta-instance, µs. */
  decisionsUs: number[];
  placed: number;
  machinesClaimed: number;
  errors: Record<string, number>;
  /** Which meta-instances got a placement error. */
  errorIds: Set<string>;
  other: number;
}

/**
 * One pass: the requests in order, each decided on a snapshot whose candidates are the type's free machines in the
 * allocatable index (the first `candidatePage` by id, or all of them), shared by all and shrinking as machines are
 * claimed. Only reconcileMetaInstance is timed; building the snapshot and applying the decision are not.
 */
function pass(fleet: Machine[], requests: Request[], candidatePage: number): PassResult {
  const current = new Map(fleet.map((m) => [m.id, m]));
  const free = new Map<string, Machine[]>();
  for (const m of fleet) {
    if (!inAllocatableIndex(m)) continue;
    if (!free.has(m.machineType)) free.set(m.machineType, []);
    free.get(m.machineType)!.push(m);
  }
  let ids = 0;
  const result: PassResult = { totalMs: 0, decisionsUs: [], placed: 0, machinesClaimed: 0, errors: {}, errorIds: new Set(), other: 0 };
  for (const { meta } of requests) {
    const pool = free.get(meta.machineType) ?? [];
    const snapshot: MetaSnapshot = {
      meta,
      members: [],
      candidates: pool.length > candidatePage ? pool.slice(0, candidatePage) : pool,
      pinned: new Map((meta.machineIds ?? []).map((id) => [id, current.get(id) ?? null])),
      heartbeat,
      now: NOW,
      rules,
      newInstance: () => {
        const id = `i-${++ids}`;
        return { id, org: meta.org, name: id, labels: {}, clientToken: `ct-${ids}`, createdBy: `meta-instance:${meta.id}` };
      },
    };
    const t0 = performance.now();
    const decision = reconcileMetaInstance(snapshot);
    const dt = performance.now() - t0;
    result.totalMs += dt;
    result.decisionsUs.push(dt * 1000);

    if (decision.kind !== 'commit') {
      result.other++;
      continue;
    }
    const claimed = (decision.change.machines ?? []).map((v) => v.after).filter((m) => m.state === 'Assigned');
    const after = decision.change.metaInstances?.find((v) => v.after.id === meta.id)?.after;
    if (claimed.length > 0) {
      result.placed++;
      result.machinesClaimed += claimed.length;
      const taken = new Set(claimed.map((m) => m.id));
      for (const m of claimed) current.set(m.id, m);
      free.set(meta.machineType, pool.filter((m) => !taken.has(m.id)));
    } else if (after?.placementError) {
      // Grouped by the kind of message (the numbers in it vary).
      const kind = after.placementError.replace(/\b[a-z0-9]+-r\d+-\d+\b/g, '<machine>').replace(/\b\d+\b/g, 'N');
      result.errors[kind] = (result.errors[kind] ?? 0) + 1;
      result.errorIds.add(meta.id);
    } else {
      result.other++;
    }
  }
  return result;
}

function measure(fleet: Machine[], requests: Request[], candidatePage: number, options: PlacementOptions) {
  for (let i = 0; i < options.warmupPasses; i++) pass(fleet, requests, candidatePage);
  const passes: PassResult[] = [];
  for (let i = 0; i < options.passes; i++) passes.push(pass(fleet, requests, candidatePage));
  const decisions = passes.flatMap((p) => p.decisionsUs).sort((a, b) => a - b);
  const totals = passes.map((p) => p.totalMs).sort((a, b) => a - b);
  const first = passes[0]!;
  const errors = Object.values(first.errors).reduce((s, n) => s + n, 0);
  return {
    errorIds: first.errorIds,
    total: { unit: 'ms to decide all meta-instances once (sum of the decision times), over the measured passes', median: round(percentile(totals, 50)), min: round(totals[0]!), max: round(totals.at(-1)!) },
    per_decision: {
      unit: 'µs per reconcileMetaInstance call, all measured passes pooled',
      samples: decisions.length,
      median: round(percentile(decisions, 50), 1),
      p99: round(percentile(decisions, 99), 1),
      max: round(decisions.at(-1)!, 1),
      mean: round(decisions.reduce((s, x) => s + x, 0) / decisions.length, 1),
    },
    outcomes: {
      placed: first.placed,
      machines_claimed: first.machinesClaimed,
      errors,
      error_kinds: first.errors,
      other: first.other,
      same_in_every_pass: passes.every((p) => p.placed === first.placed && p.machinesClaimed === first.machinesClaimed),
    },
  };
}

export function placementBench(options: PlacementOptions = defaultPlacementOptions) {
  const started = performance.now();
  const fleet = buildFleet(options.machines, random(7));
  const requests = buildRequests(options.metaInstances, fleet, random(11));
  const types = Object.fromEntries(TYPES.map(({ type }) => {
    const ofType = fleet.filter((m) => m.machineType === type);
    return [type, {
      machines: ofType.length,
      racks: new Set(ofType.map((m) => m.rack)).size,
      in_allocatable_index: ofType.filter(inAllocatableIndex).length,
      heartbeat_stale: ofType.filter((m) => !m.heartbeatLive).length,
      requests: requests.filter((r) => r.meta.machineType === type).length,
      nodes_requested: requests.filter((r) => r.meta.machineType === type).reduce((s, r) => s + r.meta.minNodes, 0),
    }];
  }));
  const { errorIds: pageErrors, ...page } = measure(fleet, requests, options.candidatePage, options);
  const { errorIds: wholeErrors, ...whole } = measure(fleet, requests, Number.POSITIVE_INFINITY, options);
  const largestPool = Math.max(...Object.values(types).map((t) => t.in_allocatable_index));
  return {
    wall_time: { unit: 's', value: round((performance.now() - started) / 1000, 1) },
    config: {
      machines: fleet.length,
      meta_instances: requests.length,
      rack_size: RACK_SIZE,
      types,
      min_nodes_drawn_from: MIN_NODES,
      same_rack: requests.filter((r) => r.meta.placement.sameRack).length,
      pinned: requests.filter((r) => r.meta.machineIds).length,
      warmup_passes: options.warmupPasses,
      measured_passes: options.passes,
      method:
        'pure domain, no I/O: each meta-instance is decided by reconcileMetaInstance on a snapshot (new meta-instance, no members) whose candidates are its type\'s free machines in the allocatable index, shared by all and shrinking as machines are claimed; only the call is timed (performance.now()), after warm-up passes over the same fleet and requests (seeded, identical every run)',
    },
    candidates_as_the_service_loads_them: { candidate_page: options.candidatePage, ...page },
    candidates_whole_type: { candidate_page: `all free machines of the type in the index (up to ${largestPool})`, ...whole },
    errors_only_with_the_page: {
      unit: 'meta-instances that get a placement error with the 500-candidate page but are placed when the decision sees every free machine of the type (sameRack requests whose rack lies beyond the page)',
      value: [...pageErrors].filter((id) => !wholeErrors.has(id)).length,
      the_other_way: [...wholeErrors].filter((id) => !pageErrors.has(id)).length,
    },
  };
}
