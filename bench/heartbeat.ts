import { parseSiteConfig } from '#config/site-config.ts';
import { REFRESH_DIVISOR } from '#domain/heartbeat.ts';
import type { Clock } from '#domain/model.ts';
import { createTables } from '#local/tables.ts';
import { demoFleet } from '#local/site-simulator.ts';
import type { AppContext, Log } from '#services/context.ts';
import { receiveHeartbeat } from '#services/heartbeats.ts';
import { registerMachines } from '#services/machines.ts';
import { createDocumentClient } from '#store/client.ts';
import { DynamoFleetStore } from '#store/dynamo-store.ts';
import { countRequests, snapshot } from './counter.ts';
import { round, subtractCost, type Cost } from './stats.ts';

export interface HeartbeatBenchOptions {
  machines: number;
  timeoutSeconds: number;
  beatIntervalSeconds: number;
  idleSimulatedSeconds: number;
  stopMachines: number;
}

export const defaultHeartbeatOptions: HeartbeatBenchOptions = {
  machines: 10_000,
  timeoutSeconds: 30,
  beatIntervalSeconds: 5,
  idleSimulatedSeconds: 600,
  stopMachines: 10,
};

const costView = (cost: Cost) => ({
  writes: cost.writes,
  write_units: round(cost.writeUnits),
  read_units: round(cost.readUnits),
  requests: cost.requests,
});

/**
 * What heartbeats cost for a large idle fleet. A context of its own on the same DynamoDB Local (a store on its own
 * table, a fake clock, the default 30 s timeout; the rest as the local site wired it); the service functions are
 * called directly, as the heartbeat route does, so simulated minutes take seconds.
 */
export async function heartbeatCost(
  endpoint: string,
  id: string,
  options: HeartbeatBenchOptions,
  /** A context the local site built, for everything but the store, clock, config and log. */
  base: AppContext,
  progress: (line: string) => void,
) {
  const tableName = `bench-heartbeat-${id}`;
  await createTables(endpoint, { table: tableName, idempotencyTable: `${tableName}-idempotency` });
  let nowMs = Date.parse('2030-01-01T00:00:00.000Z');
  const clock: Clock = { now: () => new Date(nowMs) };
  const client = createDocumentClient(endpoint);
  const store = new DynamoFleetStore(client, tableName);
  const requests = countRequests(client);
  const log: Log = {
    info: () => {},
    warn: (m, f) => progress(`heartbeat ctx warn ${m} ${JSON.stringify(f ?? {})}`),
    error: (m, f) => progress(`heartbeat ctx error ${m} ${JSON.stringify(f ?? {})}`),
  };
  // The rest (agent, events, metrics, ...) as the local site wires them; heartbeats never call the agent.
  const ctx: AppContext = {
    ...base,
    store,
    config: parseSiteConfig(`[site]\nname = "bench-heartbeat"\n[heartbeat]\ntimeout_seconds = ${options.timeoutSeconds}\n`, 'heartbeat bench config'),
    clock,
    log,
  };
  const mark = () => snapshot(requests);
  // The 10,000-machine steps take a while: say how far they got now and then.
  const ticker = setInterval(() => progress(`heartbeat: ${requests.counts.TransactWriteItemsCommand ?? 0} transactions so far`), 15_000);
  ticker.unref();
  try {
    return await measure();
  } finally {
    clearInterval(ticker);
  }

  async function measure() {
    // ---- registration (context for the figures below, not itself a heartbeat cost) ----
    const fleet = demoFleet([{ type: 'gb200', count: options.machines, racks: Math.ceil(options.machines / 80) }]);
    const ids = fleet.map((m) => m.id);
    progress(`heartbeat: registering ${ids.length} machines`);
    let before = mark();
    let t = performance.now();
    await registerMachines(ctx, fleet.map((m) => ({ id: m.id, machineType: m.machineType, rack: m.rack })), { actor: 'bench', requestId: 'bench-seed' });
    const registration = { wall_ms: round(performance.now() - t, 1), ...costView(subtractCost(mark(), before)) };

    // ---- the first roster after registration: every machine becomes live ----
    progress(`heartbeat: first roster of ${ids.length} machines`);
    before = mark();
    t = performance.now();
    const first = await receiveHeartbeat(ctx, ids);
    const initialRoster = { wall_ms: round(performance.now() - t, 1), liveness_changes: first.livenessChanges, ...costView(subtractCost(mark(), before)) };

    // ---- idle: the same roster every beat ----
    const beats = Math.floor(options.idleSimulatedSeconds / options.beatIntervalSeconds);
    progress(`heartbeat: ${beats} idle beats over ${options.idleSimulatedSeconds} simulated seconds`);
    before = mark();
    t = performance.now();
    let storedBeats = 0;
    let idleLivenessChanges = 0;
    for (let beat = 0; beat < beats; beat++) {
      nowMs += options.beatIntervalSeconds * 1000;
      const result = await receiveHeartbeat(ctx, ids);
      if (result.stored) storedBeats++;
      idleLivenessChanges += result.livenessChanges;
    }
    const idleWallMs = performance.now() - t;
    const idle = subtractCost(mark(), before);
    const simulatedSeconds = beats * options.beatIntervalSeconds;

    // ---- a roster change: some machines stop beating ----
    const step = Math.floor(ids.length / options.stopMachines);
    const stopped = new Set(Array.from({ length: options.stopMachines }, (_, i) => ids[i * step + Math.floor(step / 2)]!));
    const roster = ids.filter((m) => !stopped.has(m));
    progress(`heartbeat: ${stopped.size} machines leave the roster`);
    nowMs += options.beatIntervalSeconds * 1000;
    before = mark();
    t = performance.now();
    const change = await receiveHeartbeat(ctx, roster);
    const rosterChange = { stopped: stopped.size, wall_ms: round(performance.now() - t, 1), liveness_changes: change.livenessChanges, ...costView(subtractCost(mark(), before)) };

    // The beats after the change are back to idle cost.
    before = mark();
    for (let beat = 0; beat < 12; beat++) {
      nowMs += options.beatIntervalSeconds * 1000;
      await receiveHeartbeat(ctx, roster);
    }
    const afterChange = subtractCost(mark(), before);

    const writesPerSecond = idle.writes / simulatedSeconds;
    return {
      machines: ids.length,
      heartbeat_timeout: { unit: 's', value: options.timeoutSeconds },
      beat_interval: { unit: 's (simulated)', value: options.beatIntervalSeconds },
      refresh_every: { unit: 's (simulated): timeout / REFRESH_DIVISOR', value: options.timeoutSeconds / REFRESH_DIVISOR },
      registration: { unit: 'writes = DynamoDB write requests (transactions count one), units = capacity units, wall in ms', ...registration },
      initial_roster: { unit: 'writes = DynamoDB write requests, units = capacity units, wall in ms', ...initialRoster },
      idle: {
        unit: 'writes = DynamoDB write requests, units = capacity units, simulated time in s, wall in ms',
        simulated_seconds: simulatedSeconds,
        beats,
        beats_that_wrote: storedBeats,
        liveness_changes: idleLivenessChanges,
        wall_ms: round(idleWallMs, 1),
        ...costView(idle),
        writes_per_second: { unit: 'DynamoDB writes per simulated second', value: round(writesPerSecond, 4) },
        write_units_per_second: { unit: 'write capacity units per simulated second', value: round(idle.writeUnits / simulatedSeconds, 4) },
        read_units_per_second: { unit: 'read capacity units per simulated second', value: round(idle.readUnits / simulatedSeconds, 4) },
        target: 'well under one write per second for an idle fleet',
        meets_target: writesPerSecond < 1,
      },
      roster_change: { unit: 'writes = DynamoDB write requests, units = capacity units, wall in ms', ...rosterChange },
      after_change_idle: { unit: 'writes over 12 beats (60 simulated s) with the new roster', ...costView(afterChange) },
    };
  }
}
