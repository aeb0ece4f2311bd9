import { API_MACHINES, API_SWEEP_INTERVAL_MS, apiSiteToml, MACHINE_TYPE, type ApiCycle, type OperationCost } from './api.ts';
import type { FloorCycle } from './floor.ts';
import { perOperation, ratio, round, summarize, type Cost } from './stats.ts';

// The api part's figures from its measured rounds: latency on each side and their ratios, what each operation cost,
// and medians per quarter of the run to show drift.

export interface ApiRunSetting {
  apiWarmup: number;
  floorWarmup: number;
  settleMs: number;
}

/** Medians per consecutive slice of the run, to show drift. */
const SLICES = 4;

const sameCost = (a: Cost, b: Cost) =>
  a.writes === b.writes &&
  round(a.writeUnits) === round(b.writeUnits) &&
  round(a.readUnits) === round(b.readUnits) &&
  JSON.stringify(Object.entries(a.requests).sort()) === JSON.stringify(Object.entries(b.requests).sort());

/** The meter's deltas over each call, divided by the count, next to the attributed figure. */
function meterWindow(ops: OperationCost[]) {
  const window = perOperation(ops.map((o) => o.meterWindow));
  return {
    unit: "the store client's metered deltas (bench/counter.ts) over each call, divided by the count; per operation",
    write_units_per_op: window.write_units_per_op.value,
    writes_per_op: window.writes_per_op.value,
    read_units_per_op: window.read_units_per_op.value,
    calls_where_other_site_work_overlapped: ops.filter((o) => !sameCost(o.attributed, o.meterWindow)).length,
  };
}

function slices(apiCycles: ApiCycle[], floorCycles: FloorCycle[]) {
  const size = Math.ceil(apiCycles.length / SLICES);
  const out = [];
  for (let start = 0; start < apiCycles.length; start += size) {
    const a = apiCycles.slice(start, start + size);
    const f = floorCycles.slice(start, start + size);
    out.push({
      rounds: a.length,
      api_create: summarize(a.map((c) => c.createMs)).median,
      floor_create: summarize(f.map((c) => c.createMs)).median,
      api_release: summarize(a.map((c) => c.releaseMs)).median,
      floor_release: summarize(f.map((c) => c.releaseMs)).median,
    });
  }
  return out;
}

export function apiReport(apiCycles: ApiCycle[], floorCycles: FloorCycle[], setting: ApiRunSetting) {
  const apiCreate = summarize(apiCycles.map((c) => c.createMs));
  const apiRelease = summarize(apiCycles.map((c) => c.releaseMs));
  const floorCreate = summarize(floorCycles.map((c) => c.createMs));
  const floorRelease = summarize(floorCycles.map((c) => c.releaseMs));
  const ratioUnit = 'ratio (API latency / contract floor latency)';
  const ratios = {
    unit: ratioUnit,
    create_median: ratio(apiCreate.median, floorCreate.median),
    create_p99: ratio(apiCreate.p99, floorCreate.p99),
    release_median: ratio(apiRelease.median, floorRelease.median),
    release_p99: ratio(apiRelease.p99, floorRelease.p99),
  };
  /** Median of the per-pair ratios (each API round against the floor round next to it): robust to slow drift. */
  const paired = (pick: (c: ApiCycle | FloorCycle) => number) => summarize(apiCycles.map((a, i) => pick(a) / pick(floorCycles[i]!))).median;
  const creates = apiCycles.map((c) => c.create);
  const releases = apiCycles.map((c) => c.release);
  return {
    config: {
      samples: { api_rounds: apiCycles.length, floor_rounds: floorCycles.length, note: 'one round = one create and one release' },
      warmup_rounds: { api: setting.apiWarmup, floor: setting.floorWarmup },
      settle_ms: setting.settleMs,
      api_site: {
        machines: API_MACHINES,
        machine_type: MACHINE_TYPE,
        sweep_interval_ms: API_SWEEP_INTERVAL_MS,
        toml: apiSiteToml.trim().split('\n'),
        method:
          'sequential rounds: POST create (timed until the response body is read), wait until the instance is Ready and the site is quiet, ' +
          'DELETE (timed), wait until the machine is Ready again and the site is quiet; fetch with keep-alive to the local HTTP server in ' +
          'the same process; API and floor rounds alternate in pairs, in random order within a pair; every timed call, API or floor, ' +
          'follows the same idle pause (settle_ms)',
        cost_attribution:
          'DynamoDB requests are attributed to an API call through its async context (tagged when the local server verifies the bench ' +
          "token), with the capacity DynamoDB reports per response; meter_window shows the store client's meter deltas over the same calls",
      },
      floor: {
        what: 'the contract floor: the least DynamoDB work each operation can do by what it promises (bench/floor.ts)',
        table: "scratch table from tableDefinition(), seeded with the site's catalog and heartbeat items and its free machines",
        create: 'Query allocatable (Limit 1) + TransactWriteItems [machine Put guarded by version, instance Put, history Put]',
        release: 'GetItem instance (consistent) + TransactWriteItems [instance Put guarded by version, machine Put guarded by version, history Put]',
        items: "the domain's own decisions (assignInstance, releaseInstance) written by the store's writesOf: the bytes and conditions the service writes",
        untimed: "between the timed calls the store commits what the site's reactions would: the instance Ready, after the release the cleanup done",
      },
    },
    ratios,
    create: {
      api: apiCreate,
      floor: floorCreate,
      ratio: { unit: ratioUnit, median: ratios.create_median, p99: ratios.create_p99, median_of_paired_ratios: paired((c) => c.createMs) },
      api_cost: perOperation(creates.map((o) => o.attributed)),
      api_cost_meter_window: meterWindow(creates),
      floor_cost: perOperation(floorCycles.map((c) => c.createCost)),
    },
    release: {
      api: apiRelease,
      floor: floorRelease,
      ratio: { unit: ratioUnit, median: ratios.release_median, p99: ratios.release_p99, median_of_paired_ratios: paired((c) => c.releaseMs) },
      api_cost: perOperation(releases.map((o) => o.attributed)),
      api_cost_meter_window: meterWindow(releases),
      floor_cost: perOperation(floorCycles.map((c) => c.releaseCost)),
    },
    drift: { unit: 'ms, medians of consecutive quarters of the measured rounds', slices: slices(apiCycles, floorCycles) },
  };
}

export type ApiResult = ReturnType<typeof apiReport>;
