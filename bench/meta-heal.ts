// How long from a backing machine's failure until its meta-instance has a replacement that is Ready, on the local
// runner; stream-driven, and on a second site where only the sweep reconciles.

import type { Instance } from '#domain/core/model.ts';
import { dueTimes, ROSTER_WALK_GRACE_MS } from '#reconcilers/due-times.ts';
import type { LocalSite } from '#local/runner.ts';
import { fastSiteToml, freeMachines, startBenchSite, warnsOrFails } from './site.ts';
import { createDocumentClient } from '#store/client.ts';
import { DynamoFleetStore } from '#store/dynamo-store.ts';
import { recordedMembers } from '#test/support/meta-members.ts';
import { percentile, ratio, round, summarize } from './stats.ts';

export const META_MACHINE_TYPE = 'gb200';
export const META_MACHINES = 8;
const ORG = 'bench-meta';
/** Seconds; the failure of heartbeat trials counts from the stop, so this is part of their figure. */
const HEARTBEAT_TIMEOUT_S = 2;

/**
 * A small site with a fast simulator: 8 gb200 in 2 racks, agent beats every 0.25 s against a 2 s heartbeat timeout,
 * 20 ms to provision or clean a machine (real machines take minutes: the figure is the control plane's own part).
 */
export const metaSiteToml = fastSiteToml({
  name: 'bench-meta',
  machineType: META_MACHINE_TYPE,
  machines: META_MACHINES,
  racks: 2,
  heartbeatIntervalSeconds: 0.25,
  heartbeatTimeoutSeconds: HEARTBEAT_TIMEOUT_S,
});

export interface MetaHealOptions {
  /** Override-failure trials on the stream-driven site (the headline figure), after `warmupTrials` not counted. */
  trials: number;
  warmupTrials: number;
  /** Override failures tried on the sweep-only site, each waited for `probeIntervals` sweep intervals. */
  sweepProbes: number;
  probeIntervals: number;
  /** Heartbeat-stop trials on each site (0 skips them). */
  heartbeatTrials: number;
  /** The sweep's schedule on both sites. */
  sweepIntervalMs: number;
  /** How often the bench looks at the meta-instance's members while it waits (its record, then the members it lists, by key). */
  pollMs: number;
}

type FailureKind = 'override' | 'heartbeat';

interface Trial {
  /** Failure injected → replacement Ready (undefined when it never came within the wait). */
  ms?: number;
  /** Failure injected → the replacement instance exists (placed, Provisioning). */
  placedMs?: number;
  /** How long the failure injection call itself took (included in the figures). */
  injectMs: number;
  /** Random pause before the failure, so trials do not start in step with the sweep's ticks. */
  phaseMs: number;
}

const LIVE: ReadonlySet<Instance['status']> = new Set(['Provisioning', 'Ready', 'Repairing']);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface MetaSite {
  site: LocalSite;
  trial(kind: FailureKind, waitMs: number, phaseMaxMs: number): Promise<Trial>;
  stop(): Promise<void>;
}

async function startMetaSite(
  endpoint: string,
  tableName: string,
  stream: boolean,
  sweepIntervalMs: number,
  pollMs: number,
  progress: (line: string) => void,
): Promise<MetaSite> {
  const { site, siteLog } = await startBenchSite({
    endpoint,
    tableName,
    toml: metaSiteToml,
    sweepIntervalMs,
    streamPoller: stream,
    onLine: (line) => (warnsOrFails(line) || /SET ASIDE/.test(line)) && progress(`meta site (${stream ? 'stream' : 'sweep only'}): ${line}`),
  });
  try {
    const admin = await site.issuer.mint({ sub: 'bench-admin', org: 'provider', roles: ['provider-admin'] }, '2h');
    const tenant = await site.issuer.mint({ sub: 'bench-tenant', org: ORG, roles: ['tenant'] }, '2h');
    // Our own reads go through a client of their own, outside the site's meter.
    const observer = new DynamoFleetStore(createDocumentClient(endpoint), tableName, dueTimes);
    const call = async (method: string, path: string, token: string | undefined, body: unknown, expect: number[]) => {
      const response = await fetch(`${site.url}${path}`, {
        method,
        headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      if (!expect.includes(response.status)) throw new Error(`bench: ${method} ${path} answered ${response.status}: ${text}`);
      return text ? (JSON.parse(text) as Record<string, unknown>) : {};
    };
    const until = async <T>(what: string, check: () => Promise<T | undefined>, timeoutMs: number): Promise<T> => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const value = await check();
        if (value !== undefined) return value;
        if (Date.now() > deadline) throw new Error(`bench: ${what} within ${timeoutMs} ms; site log:\n${siteLog.join('\n')}`);
        await sleep(25);
      }
    };
    // Without the stream, a roster change (the fleet's first, a stopped heartbeat) reaches the machines once the
    // sweep's grace on its bucket has passed: every wait on one here includes it.
    const walkGraceMs = stream ? 0 : ROSTER_WALK_GRACE_MS;
    const recoveryMs = 3 * sweepIntervalMs + 15_000 + walkGraceMs;

    await until(
      'the fleet live and allocatable',
      async () => {
        const free = await freeMachines(observer, META_MACHINE_TYPE, 100);
        return free.length === META_MACHINES && free.every((m) => m.heartbeatLive) ? true : undefined;
      },
      30_000 + walkGraceMs,
    );

    const created = await call('POST', `/v2/org/${ORG}/nico/meta-instance`, tenant, { machineType: META_MACHINE_TYPE, minNodes: 1 }, [201]);
    const metaId = String(created.id);
    const liveMembers = async () => (await recordedMembers(observer, metaId)).filter((i) => LIVE.has(i.status));
    /** The one member, once it is Ready on a healthy, live machine and the meta-instance says Ready. */
    const settled = async () => {
      const [meta, live] = await Promise.all([observer.getMetaInstance(metaId), liveMembers()]);
      if (meta?.status !== 'Ready' || live.length !== 1 || live[0]!.status !== 'Ready') return undefined;
      const machine = await observer.getMachine(live[0]!.machineId);
      return machine?.heartbeatLive && machine.healthOverrides.length === 0 ? live[0]! : undefined;
    };
    await until('the meta-instance placed and its member Ready', settled, recoveryMs);

    const inject = (kind: FailureKind, machineId: string, failed: boolean) =>
      kind === 'override'
        ? failed
          ? call(
              'POST',
              `/admin/machines/${encodeURIComponent(machineId)}/health-overrides`,
              admin,
              { template: 'degraded', message: 'bench: simulated failure' },
              [200, 201],
            )
          : call('DELETE', `/admin/machines/${encodeURIComponent(machineId)}/health-overrides/degraded`, admin, undefined, [200, 204])
        : call('POST', `/_sim/machines/${encodeURIComponent(machineId)}/heartbeat`, undefined, { stopped: failed }, [200]);

    const trial = async (kind: FailureKind, waitMs: number, phaseMaxMs: number): Promise<Trial> => {
      const member = await until('the meta-instance settled before a trial', settled, recoveryMs);
      await site.streamIdle(10_000);
      const phaseMs = Math.random() * phaseMaxMs;
      await sleep(phaseMs);

      // ---- measured: nothing here wakes the stream poller (no streamIdle), so reactions come at its own pace ----
      const t0 = performance.now();
      await inject(kind, member.machineId, true);
      const injectMs = performance.now() - t0;
      let placedMs: number | undefined;
      let ms: number | undefined;
      const deadlineMs = waitMs + (kind === 'heartbeat' ? walkGraceMs : 0);
      while (performance.now() - t0 < deadlineMs) {
        const replacements = (await liveMembers()).filter((i) => i.id !== member.id);
        const at = performance.now() - t0;
        if (replacements.length > 0) placedMs ??= at;
        if (replacements.some((i) => i.status === 'Ready')) {
          ms = at;
          break;
        }
        await sleep(pollMs);
      }

      // ---- the machine returns; wait until the site is back where it started ----
      await inject(kind, member.machineId, false);
      if (ms !== undefined) {
        await until(
          `machine ${member.machineId} back in the pool`,
          async () => {
            const machine = await observer.getMachine(member.machineId);
            return machine?.state === 'Ready' && !machine.instanceId && machine.heartbeatLive && machine.healthOverrides.length === 0 ? true : undefined;
          },
          recoveryMs,
        );
      }
      return { ms, placedMs, injectMs, phaseMs };
    };

    return {
      site,
      trial,
      stop: () => site.stop(),
    };
  } catch (error) {
    await site.stop();
    throw error;
  }
}

const ratioOf = (a: number | null, b: number | null) => (a === null || b === null ? null : ratio(a, b));
const ms = (value: number | undefined) => (value === undefined ? null : round(value, 1));

function summary(trials: Trial[]) {
  const done = trials.filter((t) => t.ms !== undefined);
  const all = done.length > 0 ? summarize(done.map((t) => t.ms!)) : { median: null, max: null, min: null, mean: null };
  const sorted = done.map((t) => t.ms!).sort((a, b) => a - b);
  return {
    unit: 'ms from the failure call being sent until a different member of the meta-instance is Ready',
    trials: trials.length,
    replaced: done.length,
    median: all.median,
    p90: done.length > 0 ? round(percentile(sorted, 90)) : null,
    max: all.max,
    min: all.min,
    mean: all.mean,
    placed_median: {
      unit: 'ms until the replacement exists (Provisioning); the rest is provisioning it',
      value: done.length > 0 ? summarize(done.map((t) => t.placedMs!)).median : null,
    },
    inject_call_median: { unit: 'ms the failure call itself took (included above)', value: summarize(trials.map((t) => t.injectMs)).median },
    samples: trials.map((t) => ms(t.ms)),
  };
}

/**
 * Runs both sites one after the other on the DynamoDB Local given: the stream-driven one first (override failures,
 * then heartbeat stops), then the sweep-only one (a few override failures with a bounded wait, then heartbeat stops).
 */
export async function metaHeal(endpoint: string, id: string, options: MetaHealOptions, progress: (line: string) => void) {
  const interval = options.sweepIntervalMs;
  const heartbeatWait = HEARTBEAT_TIMEOUT_S * 1000 + 3 * interval + 10_000;
  const started = performance.now();

  // ---- the stream-driven site ----
  let site = await startMetaSite(endpoint, `bench-meta-stream-${id}`, true, interval, options.pollMs, progress);
  const streamOverride: Trial[] = [];
  const streamHeartbeat: Trial[] = [];
  try {
    progress(`meta: stream site; ${options.warmupTrials} warm-up and ${options.trials} measured override failures`);
    for (let i = 0; i < options.warmupTrials + options.trials; i++) {
      const t = await site.trial('override', 30_000, 0);
      if (t.ms === undefined) throw new Error('bench: the stream-driven site did not replace a member within 30 s');
      if (i >= options.warmupTrials) streamOverride.push(t);
    }
    progress(`meta: stream site; override median ${summarize(streamOverride.map((t) => t.ms!)).median} ms; ${options.heartbeatTrials} heartbeat stops`);
    for (let i = 0; i < options.heartbeatTrials; i++) streamHeartbeat.push(await site.trial('heartbeat', heartbeatWait, interval));
  } finally {
    await site.stop();
  }

  // ---- the sweep-only site: the stream poller is not running, the sweep on the same schedule ----
  site = await startMetaSite(endpoint, `bench-meta-sweep-${id}`, false, interval, options.pollMs, progress);
  const sweepOverride: Trial[] = [];
  const sweepHeartbeat: Trial[] = [];
  try {
    progress(`meta: sweep-only site; ${options.sweepProbes} override failure(s), each waited ${options.probeIntervals} sweep intervals`);
    for (let i = 0; i < options.sweepProbes; i++) sweepOverride.push(await site.trial('override', options.probeIntervals * interval, interval));
    progress(`meta: sweep-only site; ${options.heartbeatTrials} heartbeat stops`);
    for (let i = 0; i < options.heartbeatTrials; i++) sweepHeartbeat.push(await site.trial('heartbeat', heartbeatWait, interval));
  } finally {
    await site.stop();
  }

  const streamO = summary(streamOverride);
  const sweepO = summary(sweepOverride);
  const streamH = summary(streamHeartbeat);
  const sweepH = summary(sweepHeartbeat);
  const probeWaitMs = options.probeIntervals * interval;
  return {
    wall_time: { unit: 's', value: round((performance.now() - started) / 1000, 1) },
    config: {
      machines: META_MACHINES,
      machine_type: META_MACHINE_TYPE,
      meta_instance: { minNodes: 1, sameRack: false },
      warmup_trials: { unit: 'override trials on the stream site before the measured ones, not counted', value: options.warmupTrials },
      sweep_interval: {
        unit: 's',
        local: interval / 1000,
        production: 60,
        note: `EventBridge Scheduler rate(1 minute) in lib/sweep.ts; both local sites use the same interval, scaled down 60/${interval / 1000}x`,
      },
      heartbeat_timeout: { unit: 's', value: HEARTBEAT_TIMEOUT_S },
      toml: metaSiteToml.trim().split('\n'),
      poll: { unit: "ms between the bench's looks at the members (its resolution)", value: options.pollMs },
      sweep_only_site: 'startLocalSite({ streamPoller: false }): no stream reactions at all; the schedule timer runs the same sweep handler',
      method:
        'per trial: wait until the meta-instance is Ready with one Ready member on a healthy live machine; fail that machine (override: POST ' +
        '/admin/machines/{id}/health-overrides template degraded as provider-admin; heartbeat: the simulated agent leaves it out of its roster); time ' +
        'until a different member is Ready; then undo the failure and wait until the machine is back in the pool. Heartbeat and sweep-only trials start ' +
        'after a random pause of up to one sweep interval so they do not fall in step with the sweep.',
    },
    stream: {
      override: streamO,
      ...(options.heartbeatTrials > 0
        ? {
            heartbeat: {
              ...streamH,
              note:
                'a stopped heartbeat is written once (heartbeatLive false, heartbeatStaleAt = last seen + timeout) and the stream reaction finds it not ' +
                'yet stale; the sweep finds it through the due index once stale, so detection waits for a sweep tick on this site too, and the stream then ' +
                'provisions the replacement at once',
            },
          }
        : {}),
    },
    sweep_only: {
      override: {
        ...sweepO,
        wait_per_trial: { unit: 'ms', value: probeWaitMs, sweep_intervals: options.probeIntervals },
        note:
          sweepOverride.length === 0
            ? 'not run (BENCH_META_SWEEP_PROBES=0)'
            : sweepO.replaced === 0
              ? 'never replaced: a health override on a bound machine puts nothing in the due index (items.ts machineDueAt covers Cleanup and stale ' +
                'heartbeats, metaDueAt Placing/Retrying/Deleting), so only the stream reaction finds this failure'
              : 'replaced within the wait',
      },
      ...(options.heartbeatTrials > 0
        ? { heartbeat: { ...sweepH, note: 'the sweep finds the stale machine and places the replacement; the next tick provisions it' } }
        : {}),
    },
    ratios: {
      unit: 'ratio (sweep-only median / stream median), same failure',
      override: sweepO.replaced === 0 ? null : ratioOf(sweepO.median, streamO.median),
      override_lower_bound:
        sweepO.replaced === 0 && sweepOverride.length > 0
          ? {
              value: ratioOf(probeWaitMs, streamO.median),
              note: 'not replaced within the wait: the ratio is at least wait / stream median (unbounded in fact)',
            }
          : null,
      heartbeat: options.heartbeatTrials > 0 ? ratioOf(sweepH.median, streamH.median) : null,
    },
  };
}
