import { round, ratio, summarize } from './stats.ts';
import { startBenchSite, warnsOrFails } from './site.ts';

// The fleet summary's read at site scale, against the cheapest read an operator's screen makes: a 50-machine page of
// the machine listing, both through the local HTTP API, on the same site, in the same run. The summary's counts come
// from counter items the stream keeps, so its read must not grow with the fleet; the racks it no longer carries are
// paged by GET /admin/fleet/racks, whose page is timed beside it (not judged).

export interface SummaryReadOptions {
  machines: number;
  /** Timed pairs (one summary, one machine page). */
  samples: number;
  warmup: number;
}

export const defaultSummaryReadOptions: SummaryReadOptions = { machines: 10_000, samples: 100, warmup: 20 };

/** The summary's median read, over the median read of a 50-machine page. */
export const SUMMARY_GOAL_RATIO = 2;
export const MACHINE_PAGE = 50;

/** GB200 NVL72: 18 trays of 4 GPUs in a rack, one NVLink domain a rack. H100 hosts of 8 GPUs, 8 to a rack. */
const GB200_RACK = 18;
const H100_RACK = 8;

export function summarySiteToml(machines: number): string {
  const gb200 = Math.ceil(machines / 2);
  const h100 = machines - gb200;
  return `
[site]
name = "bench-summary"
[heartbeat]
timeout_seconds = 3600
[simulator]
machines = [
  { type = "gb200", count = ${gb200}, racks = ${Math.ceil(gb200 / GB200_RACK)}, nvlink_domain_size = ${GB200_RACK} },
  { type = "h100", count = ${h100}, racks = ${Math.ceil(h100 / H100_RACK)} },
]
heartbeat_interval_seconds = 600
`;
}

/** One read: its wall time until the body was read, and the body's size. */
interface Read {
  ms: number;
  bytes: number;
}

const SWEEP_INTERVAL_MS = 60_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function summaryRead(endpoint: string, id: string, options: SummaryReadOptions, progress: (line: string) => void) {
  const tableName = `bench-summary-${id}`;
  const started = performance.now();
  const { site, siteLog } = await startBenchSite({
    endpoint,
    tableName,
    toml: summarySiteToml(options.machines),
    sweepIntervalMs: SWEEP_INTERVAL_MS,
    onLine: (line) => warnsOrFails(line) && progress(`summary site: ${line}`),
  });
  try {
    const admin = await site.issuer.mint({ sub: 'bench-admin', org: 'provider', roles: ['provider-admin'] }, '2h');
    const read = async (path: string): Promise<Read & { body: Record<string, unknown> }> => {
      const before = performance.now();
      const response = await fetch(`${site.url}${path}`, { headers: { authorization: `Bearer ${admin}` } });
      const text = await response.text();
      const ms = performance.now() - before;
      if (response.status !== 200) throw new Error(`summary bench: GET ${path} answered ${response.status}: ${text}`);
      return { ms, bytes: Buffer.byteLength(text), body: JSON.parse(text) as Record<string, unknown> };
    };
    const deadline = Date.now() + 120_000 + options.machines * 50;
    for (;;) {
      // A busy host may drop a connection while the site starts: that look counts as not yet.
      const body = await read('/admin/fleet/summary').then(
        (r) => r.body,
        () => ({}) as Record<string, unknown>,
      );
      if (body.machines === options.machines && body.allocatable === options.machines) break;
      if (Date.now() > deadline) throw new Error(`summary bench: the summary never counted every machine allocatable; site log:\n${siteLog.join('\n')}`);
      await sleep(1_000);
    }
    const readyS = round((performance.now() - started) / 1000, 1);
    progress(`summary: ${options.machines} machines allocatable after ${readyS} s; ${options.warmup} warm-up and ${options.samples} timed pairs`);

    const paths = {
      summary: '/admin/fleet/summary',
      machinePage: `/admin/machines?limit=${MACHINE_PAGE}`,
      summaryWithDomains: '/admin/fleet/summary?include=nvlinkDomains',
      rackPage: `/admin/fleet/racks?machineType=gb200&limit=${MACHINE_PAGE}`,
    } as const;
    type Name = keyof typeof paths;
    const reads: Record<Name, Read[]> = { summary: [], machinePage: [], summaryWithDomains: [], rackPage: [] };
    const names = Object.keys(paths) as Name[];
    for (let i = 0; i < options.warmup + options.samples; i++) {
      // Each round reads every path once, in a random order, so that load from elsewhere falls on all alike.
      const order = [...names].sort(() => Math.random() - 0.5);
      for (const name of order) {
        const { ms, bytes } = await read(paths[name]);
        if (i >= options.warmup) reads[name].push({ ms, bytes });
      }
    }
    const timed = (name: Name) => ({ path: paths[name], latency: summarize(reads[name].map((r) => r.ms)), bytes: reads[name].at(-1)!.bytes });
    const summary = timed('summary');
    const machinePage = timed('machinePage');
    const ratioToPage = ratio(summary.latency.median, machinePage.latency.median);
    return {
      config: { ...options, gb200_rack: GB200_RACK, h100_rack: H100_RACK, site_ready_s: readyS },
      summary,
      machine_page: machinePage,
      summary_with_domains: timed('summaryWithDomains'),
      rack_page: timed('rackPage'),
      ratio_to_machine_page: ratioToPage,
      goal_ratio: SUMMARY_GOAL_RATIO,
      meets_goal: ratioToPage <= SUMMARY_GOAL_RATIO,
    };
  } finally {
    await site.stop();
  }
}

export type SummaryReadResult = Awaited<ReturnType<typeof summaryRead>>;
