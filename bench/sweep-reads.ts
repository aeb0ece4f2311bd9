// What the sweep reads to find its work in a 100,000-machine table with 1% of the machines due,
// against what one full Scan of the same table consumes.

import { ScanCommand, BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { dueTimes } from '#reconcilers/due-times.ts';
import type { HealthOverride, Machine } from '#domain/core/model.ts';
import { createTables } from '#local/tables.ts';
import { createDocumentClient } from '#store/client.ts';
import { DynamoFleetStore } from '#store/dynamo-store.ts';
import { machineItem } from '#store/aggregates/machine-items.ts';
import { DUE_PAGE, sweep, type SweepPosition } from '#reconcilers/sweep.ts';
import { parseSiteConfig } from '#config/site-config.ts';
import type { AppContext } from '#runtime/context.ts';
import { inProcessBus } from '#runtime/events.ts';
import { randomIds } from '#handlers/lambda-context.ts';
import { countRequests, units } from './counter.ts';
import { ratio, round } from './stats.ts';

export interface SweepReadsOptions {
  machines: number;
  /** Milliseconds each sweep run may start work in before it hands the rest to a follow-up. */
  runBudgetMs: number;
  /** How long the in-process site agent takes to answer a DELETE. */
  agentDeleteMs: number;
  /** Share of machines in the due index. */
  dueFraction: number;
  /** Share of machines with a repair request (the stuck-repair watch's index). */
  repairFraction: number;
  /** BatchWrite requests in flight at once while loading. */
  loadConcurrency: number;
}

export const defaultSweepReadsOptions: SweepReadsOptions = {
  machines: 100_000,
  runBudgetMs: 20_000,
  agentDeleteMs: 5,
  dueFraction: 0.01,
  repairFraction: 0.001,
  loadConcurrency: 8,
};

/** The goal: a backlog of 1,000 due entities cleared within 30 s. */
const GOAL_CLEAR_MS = 30_000;

/** `[repair_sla] claim_minutes` default. */
const CLAIM_MS = 60 * 60_000;
const TYPES = ['gb200', 'h100', 'b200', 'mi300x'];
const RACK_SIZE = 20;

const repairRequest = (id: string, at: string): HealthOverride => ({
  source: 'repair-request',
  mode: 'merge',
  alerts: [{ id: 'RequestRepair', target: id, message: 'bench', classifications: ['PreventAllocations', 'SuppressExternalAlerting'] }],
  issue: { category: 'HARDWARE', summary: 'bench: ECC errors' },
  createdBy: 'bench',
  createdAt: at,
});

type Role = 'assigned' | 'free' | 'due-cleanup' | 'due-stale' | 'repair-unclaimed-late' | 'repair-unclaimed-recent' | 'repair-in-repair';

/**
 * Machine `i` of `n`. Spread evenly through the id space: 1% due (nine in ten in Cleanup with the agent's DELETE
 * still to send, one in ten holding an instance while its heartbeat is past its stale time), 0.1% with a repair
 * request (60% unclaimed past the claim SLA, 20% unclaimed within it, 20% claimed by a repair tenant); of the rest
 * 60% hold an instance and 40% are free.
 */
function roleOf(i: number, n: number, options: SweepReadsOptions): Role {
  const dueEvery = Math.round(1 / options.dueFraction);
  const repairEvery = Math.round(1 / options.repairFraction);
  if (i % dueEvery === 0) return Math.floor(i / dueEvery) % 10 === 9 ? 'due-stale' : 'due-cleanup';
  if (i % repairEvery === 1) {
    const k = Math.floor(i / repairEvery) % 5;
    return k < 3 ? 'repair-unclaimed-late' : k === 3 ? 'repair-unclaimed-recent' : 'repair-in-repair';
  }
  void n;
  return i % 5 < 3 ? 'assigned' : 'free';
}

function machineOf(i: number, n: number, now: number, options: SweepReadsOptions): { machine: Machine; role: Role } {
  const type = TYPES[i % TYPES.length]!;
  const k = Math.floor(i / TYPES.length);
  const rack = `${type}-r${String(Math.floor(k / RACK_SIZE) + 1).padStart(4, '0')}`;
  const id = `${rack}-${String((k % RACK_SIZE) + 1).padStart(2, '0')}`;
  const at = (msAgo: number) => new Date(now - msAgo).toISOString();
  const role = roleOf(i, n, options);
  const base: Machine = {
    id,
    machineType: type,
    rack,
    state: 'Ready',
    labels: { 'bench/row': String(Math.floor(k / 400)) },
    healthOverrides: [],
    heartbeatLive: true,
    lastHeartbeatAt: at(3_600_000),
    version: 3,
    createdAt: at(30 * 86_400_000),
    updatedAt: at(3_600_000),
  };
  const instanceId = `i-bench-${i}`;
  switch (role) {
    case 'assigned':
      return { role, machine: { ...base, state: 'Assigned', instanceId, assignedAt: at(7_200_000) } };
    case 'free':
      return { role, machine: base };
    case 'due-cleanup':
      return { role, machine: { ...base, state: 'Cleanup', cleanup: { instanceId, phase: 'pending', attempts: 0 }, updatedAt: at(90_000) } };
    case 'due-stale':
      return {
        role,
        machine: {
          ...base,
          state: 'Assigned',
          instanceId,
          assignedAt: at(7_200_000),
          heartbeatLive: false,
          lastHeartbeatAt: at(120_000),
          heartbeatStaleAt: at(90_000),
          updatedAt: at(110_000),
        },
      };
    case 'repair-unclaimed-late':
      return { role, machine: { ...base, healthOverrides: [repairRequest(id, at(2 * CLAIM_MS))] } };
    case 'repair-unclaimed-recent':
      return { role, machine: { ...base, healthOverrides: [repairRequest(id, at(CLAIM_MS / 4))] } };
    case 'repair-in-repair':
      return {
        role,
        machine: { ...base, state: 'Assigned', instanceId, healthOverrides: [repairRequest(id, at(3 * CLAIM_MS))], assignedAt: at(2 * CLAIM_MS) },
      };
  }
}

/**
 * Sweep runs as the deployed function makes them: each starts work while its budget lasts and hands the rest to a
 * follow-up, which starts at once; the site agent is in process and accepts every DELETE after `agentDeleteMs`.
 */
async function clearBacklog(store: DynamoFleetStore, options: SweepReadsOptions) {
  const quiet = { info: () => {}, warn: () => {}, error: () => {} };
  let deletes = 0;
  const noCreate = () => Promise.reject(new Error('bench: the sweep part never creates'));
  const ctx: AppContext = {
    store,
    config: parseSiteConfig('[site]\nname = "bench"\n', 'bench config'),
    clock: { now: () => new Date() },
    ids: randomIds,
    agent: {
      create: noCreate,
      delete: async () => {
        deletes++;
        await new Promise((resolve) => setTimeout(resolve, options.agentDeleteMs));
        return { kind: 'accepted' };
      },
      // Every DELETE is answered: no report goes missing, so nothing asks where an instance stands.
      status: async () => ({ kind: 'cleaning' }),
      startMaintenance: () => Promise.reject(new Error('bench: the sweep part declares no maintenance')),
      validate: () => Promise.reject(new Error('bench: the sweep part never validates')),
      power: () => Promise.reject(new Error('bench: the sweep part asks for no power action')),
    },
    events: inProcessBus(quiet),
    metrics: { gauge: () => {}, count: () => {}, timing: () => {} },
    log: quiet,
  };
  const t0 = performance.now();
  let followUp: SweepPosition | undefined;
  let runs = 0;
  let reconciled = 0;
  let failed = 0;
  do {
    const started = performance.now();
    const result = await sweep(ctx, { from: followUp, timeLeftMs: () => options.runBudgetMs - (performance.now() - started) });
    runs++;
    reconciled += result.due;
    failed += result.failed;
    followUp = result.followUp;
  } while (followUp);
  return { ms: round(performance.now() - t0), runs, reconciled, failed, deletes };
}

async function batchWrite(client: DynamoDBDocumentClient, table: string, items: Record<string, unknown>[]): Promise<number> {
  let pending = items.map((Item) => ({ PutRequest: { Item } }));
  let retries = 0;
  for (let attempt = 0; pending.length > 0; attempt++) {
    if (attempt > 0) {
      retries++;
      await new Promise((r) => setTimeout(r, Math.min(1000, 20 * 2 ** attempt)));
    }
    const result = await client.send(new BatchWriteCommand({ RequestItems: { [table]: pending } }));
    pending = (result.UnprocessedItems?.[table] ?? []) as typeof pending;
    if (attempt > 20) throw new Error('bench: BatchWrite kept leaving items unprocessed');
  }
  return retries;
}

/** Loads the table straight through the store's item mapping (machineItem), 25 items a request, several in flight. */
async function load(client: DynamoDBDocumentClient, table: string, options: SweepReadsOptions, now: number, progress: (line: string) => void) {
  const n = options.machines;
  const roles: Record<string, number> = {};
  let next = 0;
  let written = 0;
  let retries = 0;
  let bytes = 0;
  const ticker = setInterval(() => progress(`sweep reads: ${written}/${n} machines written`), 15_000);
  ticker.unref();
  try {
    const worker = async () => {
      for (;;) {
        const start = next;
        if (start >= n) return;
        next = Math.min(n, start + 25);
        const items = [];
        for (let i = start; i < next; i++) {
          const { machine, role } = machineOf(i, n, now, options);
          roles[role] = (roles[role] ?? 0) + 1;
          const item = machineItem(machine, dueTimes.machine(machine));
          bytes += JSON.stringify(item).length;
          items.push(item);
        }
        retries += await batchWrite(client, table, items);
        written += items.length;
      }
    };
    await Promise.all(Array.from({ length: options.loadConcurrency }, worker));
  } finally {
    clearInterval(ticker);
  }
  return { roles, retries, meanItemJsonBytes: Math.round(bytes / n) };
}

export async function sweepReads(endpoint: string, id: string, options: SweepReadsOptions, progress: (line: string) => void) {
  const table = `bench-sweep-${id}`;
  await createTables(endpoint, { table, idempotencyTable: `${table}-idempotency` });
  const client = createDocumentClient(endpoint);
  const now = Date.now();

  progress(`sweep reads: loading ${options.machines} machines (${options.loadConcurrency} BatchWrites in flight)`);
  const t = performance.now();
  const loaded = await load(client, table, options, now, progress);
  const loadS = (performance.now() - t) / 1000;
  progress(`sweep reads: loaded in ${round(loadS, 1)} s`);

  const store = new DynamoFleetStore(client, table, dueTimes);
  const requests = countRequests(client);
  // The roster is fresh, so the sweep does not take its "silent site agent" branch (listing every meta-instance).
  await store.putSiteHeartbeat(null, { rosterSeenAt: new Date().toISOString(), machineCount: options.machines });

  const read = async <T>(what: () => Promise<T>) => {
    const before = { ru: requests.total.readUnits, requests: { ...requests.counts } };
    const t0 = performance.now();
    const value = await what();
    const ms = performance.now() - t0;
    const byCommand = Object.fromEntries(
      Object.entries(requests.counts)
        .map(([k, v]) => [k, v - (before.requests[k] ?? 0)])
        .filter(([, v]) => v !== 0),
    );
    return { value, readUnits: round(requests.total.readUnits - before.ru), ms: round(ms, 1), requests: byCommand };
  };

  // ---- what one sweep run reads before it reconciles anything (reconcilers/sweep.ts) ----
  const sweepNow = new Date();
  const due = await read(async () => (await store.dueEntities(sweepNow, { limit: DUE_PAGE })).items);
  const heartbeat = await read(() => store.getSiteHeartbeat());
  const repairs = await read(() => store.repairsToWatch(new Date(sweepNow.getTime() - CLAIM_MS)));
  // ---- every due entry at once (what it takes to see all 1% in one go, beyond the sweep's limit) ----
  const allDue = await read(async () => (await store.dueEntities(sweepNow, { limit: options.machines })).items);

  // ---- one full Scan of the table, eventually consistent like the index queries, every page. Select COUNT reads
  // and bills every item as a plain Scan does (the same read units, checked on DynamoDB Local) without shipping
  // 100,000 items to the bench ----
  const scan = { readUnits: 0, items: 0, pages: 0, ms: 0 };
  const t1 = performance.now();
  let start: Record<string, unknown> | undefined;
  do {
    const page = await client.send(
      new ScanCommand({ TableName: table, Select: 'COUNT', ReturnConsumedCapacity: 'TOTAL', ...(start ? { ExclusiveStartKey: start } : {}) }),
    );
    scan.readUnits += units(page.ConsumedCapacity);
    scan.items += page.Count ?? 0;
    scan.pages += 1;
    start = page.LastEvaluatedKey;
  } while (start);
  scan.ms = round(performance.now() - t1, 1);

  // ---- clearing the backlog: sweep runs (each within its budget, each follow-up at once) until none is left ----
  progress(`sweep reads: clearing ${allDue.value.length} due entities with the sweep`);
  const requestsBefore = { ...requests.counts };
  const clearing = await clearBacklog(store, options);
  const clearingRequests = Object.fromEntries(
    Object.entries(requests.counts)
      .map(([k, v]) => [k, v - (requestsBefore[k] ?? 0)])
      .filter(([, v]) => v !== 0),
  );
  const remaining = (await store.dueEntities(new Date(), { limit: options.machines })).items;

  const sweepRu = due.readUnits + heartbeat.readUnits + repairs.readUnits;
  const sweepItems = due.value.length + (heartbeat.value ? 1 : 0) + repairs.value.length;
  return {
    config: {
      machines: options.machines,
      due_fraction: options.dueFraction,
      repair_fraction: options.repairFraction,
      roles: loaded.roles,
      mean_item_json_bytes: loaded.meanItemJsonBytes,
      table:
        'a fresh table from tableDefinition() on a DynamoDB Local of its own, holding only these machine items ' +
        '(plus the site heartbeat); a real table also holds instances and history, so a real Scan costs more',
      due_page: DUE_PAGE,
      claim_sla_minutes: CLAIM_MS / 60_000,
      method:
        'machine records built in memory, written with BatchWrite (25 per request, several in flight) through machine-items.ts machineItem, so every index ' +
        "attribute is what the store would write; then the sweep's finding reads through DynamoFleetStore (dueEntities with the sweep's limit, " +
        'getSiteHeartbeat, repairsToWatch) with read-unit deltas metered on its client (counter.ts), then one full Scan of the table (all pages, ' +
        'eventually consistent as the index queries are, Select COUNT, which consumes what a plain Scan does) with ReturnConsumedCapacity TOTAL',
    },
    load: {
      unit: 's',
      value: round(loadS, 1),
      machines_per_second: Math.round(options.machines / loadS),
      batch_retries: loaded.retries,
      concurrency: options.loadConcurrency,
    },
    sweep: {
      unit: "read capacity units (deltas metered on the store's client), items returned, ms",
      read_units: round(sweepRu),
      items_read: sweepItems,
      due_entities: { read_units: due.readUnits, items: due.value.length, ms: due.ms, requests: due.requests },
      site_heartbeat: { read_units: heartbeat.readUnits, items: heartbeat.value ? 1 : 0, ms: heartbeat.ms },
      repairs_to_watch: { read_units: repairs.readUnits, items: repairs.value.length, ms: repairs.ms, requests: repairs.requests },
    },
    all_due_at_once: {
      unit: "read capacity units, items, ms: dueEntities without the sweep's limit",
      read_units: allDue.readUnits,
      items: allDue.value.length,
      ms: allDue.ms,
      requests: allDue.requests,
    },
    scan: { unit: 'read capacity units, items, pages, ms', read_units: round(scan.readUnits), items: scan.items, pages: scan.pages, ms: scan.ms },
    clear_backlog: {
      unit: 'ms from the first sweep run until a run leaves nothing to follow up; entities reconciled',
      ms: clearing.ms,
      due_at_start: allDue.value.length,
      reconciled: clearing.reconciled,
      failed: clearing.failed,
      runs: clearing.runs,
      run_budget_ms: options.runBudgetMs,
      agent_delete_ms: options.agentDeleteMs,
      deletes_sent: clearing.deletes,
      requests: clearingRequests,
      still_due_after: remaining.length,
      still_due_after_why:
        'a machine holding an instance with a stale heartbeat stays in the due index until its heartbeat ' +
        'returns or its instance is released; the sweep looks at it every run and changes nothing',
      goal: { figure: clearing.ms, goal: GOAL_CLEAR_MS, ratio: ratio(clearing.ms, GOAL_CLEAR_MS), meets_goal: clearing.ms < GOAL_CLEAR_MS },
    },
    ratios: {
      unit: 'ratio (full Scan read units / sweep read units): how many times cheaper finding the work through the sparse indexes is',
      scan_over_sweep: ratio(scan.readUnits, sweepRu),
      scan_over_all_due_at_once: ratio(scan.readUnits, allDue.readUnits + heartbeat.readUnits + repairs.readUnits),
      items_scanned_over_items_read: ratio(scan.items, sweepItems),
    },
  };
}
