import { parseSiteConfig } from '#config/site-config.ts';
import type { Catalog } from '#domain/machines/catalog.ts';
import type { Machine } from '#domain/core/model.ts';
import { randomIds } from '#handlers/lambda-context.ts';
import { createTables } from '#local/tables.ts';
import { API_FUNCTION_TIMEOUT_SECONDS } from '#lib/function-timeouts.ts';
import { dueTimes } from '#reconcilers/due-times.ts';
import { startRun } from '#reconcilers/runner.ts';
import type { AppContext, Log } from '#runtime/context.ts';
import { inProcessBus } from '#runtime/events.ts';
import { prometheusMetrics } from '#runtime/prometheus-metrics.ts';
import { createReservation } from '#services/reservations.ts';
import { createDocumentClient } from '#store/client.ts';
import { DynamoFleetStore } from '#store/dynamo-store.ts';
import { inParallel } from '#store/in-parallel.ts';
import { ratio, round } from './stats.ts';

// A reservation of 1,000 machines on a 10,000-machine site: the request records it at once (202 Pending) and the
// reservation reconciler claims the machines a chunk per transaction. Judged: the request against the API's deadline,
// and the fan-out against its floor, the same number of plain machine writes (one conditional PutItem each, the
// machine as the reservation leaves it) measured on the same table in the same run.

export interface ReservationBenchOptions {
  machines: number;
  reserved: number;
}

export const defaultReservationOptions: ReservationBenchOptions = { machines: 10_000, reserved: 1_000 };

/** Plain writes in flight for the floor, as the other floors write (bench/README.md "Floors"). */
const FLOOR_IN_FLIGHT = 25;
const MACHINE_TYPE = 'gb200';
const RACK_SIZE = 8;

const rackOf = (i: number) => `rack-${String(Math.floor(i / RACK_SIZE) + 1).padStart(4, '0')}`;

function seedFleet(count: number, prefix: string, at: string): Machine[] {
  return Array.from({ length: count }, (_, i) => ({
    id: `${prefix}-${String(i).padStart(5, '0')}`,
    machineType: MACHINE_TYPE,
    rack: rackOf(i),
    state: 'Ready' as const,
    labels: {},
    healthOverrides: [],
    heartbeatLive: true,
    version: 0,
    createdAt: at,
    updatedAt: at,
  }));
}

export async function reservationBench(endpoint: string, id: string, options: ReservationBenchOptions, progress: (line: string) => void) {
  const tableName = `bench-reservation-${id}`;
  await createTables(endpoint, { table: tableName, idempotencyTable: `${tableName}-idempotency` });
  const store = new DynamoFleetStore(createDocumentClient(endpoint), tableName, dueTimes);
  const log: Log = {
    info: () => {},
    warn: (m, f) => progress(`reservation ctx warn ${m} ${JSON.stringify(f ?? {})}`),
    error: (m, f) => progress(`reservation ctx error ${m} ${JSON.stringify(f ?? {})}`),
  };
  const noAgent = () => Promise.reject(new Error('bench: the reservation part never calls the site agent'));
  const ctx: AppContext = {
    store,
    // No agent beats here: the roster stored once stays fresh for the whole part.
    config: parseSiteConfig('[site]\nname = "bench-reservation"\n[heartbeat]\ntimeout_seconds = 3600\n[validation]\nafter = []\n', 'reservation bench config'),
    clock: { now: () => new Date() },
    ids: randomIds,
    agent: { create: noAgent, delete: noAgent, status: noAgent, startMaintenance: noAgent, validate: noAgent, power: noAgent },
    events: inProcessBus(log),
    metrics: prometheusMetrics(),
    log,
  };

  // ---- the site: N free machines in the agent's roster, the catalog that lists them ----
  const at = new Date().toISOString();
  const fleet = seedFleet(options.machines, 'gb200', at);
  progress(`reservation: seeding ${fleet.length} machines`);
  await store.createMachines(fleet);
  const racks: Record<string, number> = {};
  for (const machine of fleet) racks[machine.rack] = (racks[machine.rack] ?? 0) + 1;
  const catalog: Catalog = { types: { [MACHINE_TYPE]: { count: fleet.length, racks } }, version: 0 };
  await store.commit({ catalog: { before: null, after: catalog }, history: [] });
  await store.putSiteHeartbeat(null, { rosterSeenAt: new Date().toISOString(), machineCount: fleet.length });

  // ---- the floor: as many plain machine writes, each one conditional PutItem, on machines of their own ----
  const floorFleet = seedFleet(options.reserved, 'floor', at);
  await store.createMachines(floorFleet);
  progress(`reservation: floor, ${floorFleet.length} plain machine writes`);
  let t = performance.now();
  await inParallel(floorFleet, FLOOR_IN_FLIGHT, async (machine) => {
    await store.commit({ machines: [{ before: machine, after: { ...machine, reservation: { id: 'rsv-floor', org: 'floor' } } }], history: [] });
  });
  const floorMs = performance.now() - t;

  // ---- the reservation: the request, then the reconciler's steps until it is Active ----
  progress(`reservation: reserving ${options.reserved} of ${options.machines} machines`);
  t = performance.now();
  const answered = await createReservation(ctx, { org: 'acme', machineType: MACHINE_TYPE, count: options.reserved }, { actor: 'bench', requestId: 'bench' });
  const requestMs = performance.now() - t;
  t = performance.now();
  let steps = 0;
  for (let state = answered.state; state === 'Pending'; state = (await store.getReservation(answered.id))!.state) {
    await startRun(ctx).reconcile([{ entity: 'reservation', id: answered.id }]);
    steps++;
  }
  const fanOutMs = performance.now() - t;
  const final = (await store.getReservation(answered.id))!;
  if (final.state !== 'Active' || final.machineIds.length !== options.reserved) {
    throw new Error(`the reservation ended ${final.state} holding ${final.machineIds.length} of ${options.reserved} machines`);
  }
  const deadlineMs = API_FUNCTION_TIMEOUT_SECONDS * 1000;
  return {
    machines: options.machines,
    reserved: options.reserved,
    answered: answered.state,
    request_ms: round(requestMs, 1),
    deadline_ms: deadlineMs,
    request_over_deadline: ratio(requestMs, deadlineMs),
    fan_out_ms: round(fanOutMs, 1),
    reconciler_runs: steps,
    floor_ms: round(floorMs, 1),
    fan_out_over_floor: ratio(fanOutMs, floorMs),
  };
}
