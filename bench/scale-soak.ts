// `scale` part: a site-scale soak on the local runner. A fleet of N machines carries a set of
// instances and meta-instances; then for a bounded time tenants churn through the API (create, release, read)
// while 1% of the machines fail (heartbeat stop or health override), each one backing a meta-instance member. It
// reports API latency, reconcile lag (commit → reaction done), DynamoDB units per minute, and checks the
// invariants at the end. Sizes come from the options (BENCH_SCALE_*, parts/scale.ts), so a test runs a small version.

import { randomUUID } from 'node:crypto';
import type { Instance } from '#domain/core/model.ts';
import { dueTimes } from '#reconcilers/due-times.ts';
import { startBenchSite, warnsOrFails } from './site.ts';
import { createDocumentClient } from '#store/client.ts';
import { DynamoFleetStore } from '#store/dynamo-store.ts';
import { inParallel } from '#store/in-parallel.ts';
import { parseSiteConfig } from '#config/site-config.ts';
import { SEPARATE_IN_FLIGHT } from '#reconcilers/runner.ts';
import { recordedMembers } from '#test/support/meta-members.ts';
import { countRequests } from './counter.ts';
import { siteStartFloorOnItsOwnMs } from './site-start-floor.ts';
import { heatReport, streamHeat, watchWriteTimes, type WriteTimes } from './partition-heat.ts';
import { ratio, round, summarize } from './stats.ts';
import { checkInvariants, everything, readBack, type Failure } from './scale-invariants.ts';
import { failuresOf, MACHINE_TYPES, SCALE_SOAK_METHOD, scaleSiteToml, type ScaleSoakOptions } from './scale-site.ts';

export { defaultScaleSoakOptions, type ScaleSoakOptions } from './scale-site.ts';

/** From the API answering until every machine is allocatable, against the floor of that (site-start-floor.ts). */
export const SITE_START_GOAL_RATIO = 2;
/** How often the soak reads the fleet summary while the site starts: the start's time is known to about this much. */
const SUMMARY_POLL_MS = 200;

const ORGS = 8;
/** minNodes of the meta-instances, drawn in turn. */
const META_SIZES = [1, 1, 2, 2, 4];
/** How many times a call answered 503 `throttled` is sent (a loaded host can leave a handler short of its deadline). */
const THROTTLED_TRIES = 5;

/**
 * The soak's checks on pending replacements, all failures together, at most this many a second: each reads a
 * meta-instance and its members. Each polled every 50 ms, 100 failures (10,000 machines) sent 2,000 such reads a
 * second, and DynamoDB Local, serving them beside the site, stalled the site's stream and API for over a minute.
 */
const REPLACEMENT_CHECKS_PER_S = 100;
/** How often each failure's replacement is checked for: the resolution of the failure → replacement figure. */
const replacementPollMs = (options: ScaleSoakOptions) => Math.max(50, (1000 * failuresOf(options)) / REPLACEMENT_CHECKS_PER_S);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type CallKind = 'create' | 'release' | 'list' | 'get';

export async function scaleSoak(endpoint: string, id: string, options: ScaleSoakOptions, progress: (line: string) => void) {
  const tableName = `bench-scale-${id}`;
  const floorMs = await siteStartFloorOnItsOwnMs(id, parseSiteConfig(scaleSiteToml(options), 'scale site').simulator.machines);
  progress(`scale: the site start's floor, every machine put allocatable: ${floorMs} ms`);
  const setupStarted = performance.now();
  // When each phase began, by wall clock: the hottest keys' seconds fall in one of them.
  const marks: Record<string, string> = { site_starting: new Date().toISOString() };
  const mark = (phase: string) => {
    marks[phase] = new Date().toISOString();
  };
  let writeTimes: WriteTimes | undefined;
  const { site, siteLog } = await startBenchSite({
    endpoint,
    tableName,
    onStoreClient: (client) => {
      writeTimes = watchWriteTimes([client]);
    },
    toml: scaleSiteToml(options),
    sweepIntervalMs: options.sweepIntervalMs,
    onLine: (line) => warnsOrFails(line) && progress(`scale site: ${line}`),
  });
  const siteUpS = round((performance.now() - setupStarted) / 1000, 1);
  mark('site_up');
  try {
    progress(`scale: site up with ${options.machines} machines in ${siteUpS} s`);
    // The bench's own reads go through a store of their own, outside the site's meter.
    const observer = new DynamoFleetStore(createDocumentClient(endpoint), tableName, dueTimes);
    const orgs = Array.from({ length: ORGS }, (_, i) => `scale-org-${i}`);
    const tokens = new Map(
      await Promise.all(orgs.map(async (org) => [org, await site.issuer.mint({ sub: `${org}-tenant`, org, roles: ['tenant'] }, '6h')] as const)),
    );
    const admin = await site.issuer.mint({ sub: 'scale-admin', org: 'provider', roles: ['provider-admin'] }, '6h');

    const latencies: Record<CallKind, number[]> = { create: [], release: [], list: [], get: [] };
    let measuring = false;
    let throttled = 0;
    // As a client should: a change carries an Idempotency-Key, and a 503 `throttled` is sent again with the same key
    // after its Retry-After (which finds out whether the first went through). The latency is the whole call's.
    const call = async (kind: CallKind | undefined, method: string, path: string, token: string | undefined, body: unknown, expect: number[]) => {
      const started = performance.now();
      const headers = {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(method === 'GET' ? {} : { 'idempotency-key': randomUUID() }),
      };
      for (let tries = 1; ; tries++) {
        const response = await fetch(`${site.url}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
        const text = await response.text();
        const retryAfterS = Number(response.headers.get('retry-after'));
        if (response.status === 503 && tries < THROTTLED_TRIES && Number.isFinite(retryAfterS) && text.includes('"throttled"')) {
          throttled++;
          await sleep(retryAfterS * 1000);
          continue;
        }
        if (kind && measuring) latencies[kind].push(performance.now() - started);
        if (!expect.includes(response.status)) throw new Error(`scale: ${method} ${path} answered ${response.status}: ${text}`);
        return text ? (JSON.parse(text) as Record<string, unknown>) : {};
      }
    };
    const until = async <T>(what: string, check: () => Promise<T | undefined>, timeoutMs: number, pollMs = 25): Promise<T> => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const value = await check();
        if (value !== undefined) return value;
        if (Date.now() > deadline) throw new Error(`scale: ${what} within ${timeoutMs} ms; site log:\n${siteLog.join('\n')}`);
        await sleep(pollMs);
      }
    };
    const settleMs = options.heartbeatTimeoutSeconds * 1000 + 3 * options.sweepIntervalMs + 30_000;
    const instancePath = (org: string) => `/v2/org/${org}/nico/instance`;
    const typeOf = (n: number) => MACHINE_TYPES[n % MACHINE_TYPES.length]!;
    const statusIs = (instanceId: string, wanted: Instance['status']) => async () =>
      (await observer.getInstance(instanceId))?.status === wanted ? true : undefined;

    // ---- the fleet live, then the standing load: instances and meta-instances, all Ready ----
    // Watched as an operator would, through the fleet summary (one bounded read): reading every machine every few
    // seconds takes DynamoDB Local several seconds each time, away from the roster walk being timed.
    await until(
      'the fleet summary counting every machine allocatable',
      async () => {
        // A site still walking its first roster can leave this read short of its deadline: 503, so not yet.
        const summary = await call(undefined, 'GET', '/admin/fleet/summary', admin, undefined, [200, 503]);
        return summary.machines === options.machines && summary.allocatable === options.machines ? true : undefined;
      },
      120_000 + options.machines * 50,
      SUMMARY_POLL_MS,
    );
    const fleetAllocatableS = round((performance.now() - setupStarted) / 1000 - siteUpS, 1);
    mark('fleet_allocatable');
    const since = () => `${round((performance.now() - setupStarted) / 1000, 1)} s`;
    progress(`scale: every machine allocatable ${fleetAllocatableS} s after up`);
    // What the summary counts, checked once on the machines themselves: every one live and in the allocatable index
    // (paged: one Query page stops at 1 MB, about 3,000 machines).
    const fleet = await everything((page) => observer.listMachines(page));
    const inIndex = (await Promise.all(MACHINE_TYPES.map((type) => everything((page) => observer.allocatableMachinesPage(type, page))))).flat();
    if (fleet.length !== options.machines || !fleet.every((m) => m.heartbeatLive) || inIndex.length !== options.machines) {
      throw new Error(
        `scale: the summary counted ${options.machines} allocatable, but ${fleet.filter((m) => m.heartbeatLive).length} ` +
          `of ${fleet.length} machines are live and ${inIndex.length} in the allocatable index`,
      );
    }
    const owned: Array<{ org: string; id: string }> = [];
    await inParallel(
      Array.from({ length: options.instances }, (_, n) => n),
      8,
      async (n) => {
        const org = orgs[n % ORGS]!;
        // A loaded host can let a heartbeat go stale for a moment: then the type has no allocatable machine, so try again.
        let created = await call(undefined, 'POST', instancePath(org), tokens.get(org), { machineType: typeOf(n) }, [201, 409]);
        for (let tries = 1; created.code === 'no-capacity' && tries < 30; tries++) {
          await sleep(1_000);
          created = await call(undefined, 'POST', instancePath(org), tokens.get(org), { machineType: typeOf(n) }, [201, 409]);
        }
        if (!created.id) throw new Error(`scale: no ${typeOf(n)} machine became free for the standing load: ${JSON.stringify(created)}`);
        owned.push({ org, id: String(created.id) });
      },
    );
    progress(`scale: ${owned.length} instances created at ${since()}`);
    const metaIds: string[] = [];
    await inParallel(
      Array.from({ length: options.metaInstances }, (_, n) => n),
      8,
      async (n) => {
        const org = orgs[n % ORGS]!;
        // Placed at the same moment as others, a create may lose every race for its machines: 409, safe to retry.
        const request = () =>
          call(
            undefined,
            'POST',
            `/v2/org/${org}/nico/meta-instance`,
            tokens.get(org),
            { machineType: typeOf(n), minNodes: META_SIZES[n % META_SIZES.length]! },
            [201, 409],
          );
        let created = await request();
        for (let tries = 1; created.code === 'concurrent-update' && tries < 10; tries++) created = await request();
        if (!created.id) throw new Error(`scale: meta-instance create kept failing: ${JSON.stringify(created)}`);
        metaIds.push(String(created.id));
      },
    );
    progress(`scale: ${metaIds.length} meta-instances created at ${since()}`);
    await inParallel(owned, 16, async (o) => void (await until(`instance ${o.id} Ready`, statusIs(o.id, 'Ready'), settleMs, 100)));
    progress(`scale: the instances Ready at ${since()}`);
    await inParallel(
      metaIds,
      16,
      async (metaId) =>
        void (await until(
          `meta-instance ${metaId} Ready`,
          async () => ((await observer.getMetaInstance(metaId))?.status === 'Ready' ? true : undefined),
          settleMs,
          100,
        )),
    );
    const setupS = round((performance.now() - setupStarted) / 1000, 1);
    progress(
      `scale: ${options.instances} instances and ${options.metaInstances} meta-instances Ready after ${setupS} s; churning for ${options.churnSeconds} s`,
    );

    // ---- the churn: tenants through the API, failures on a schedule ----
    const createLag: number[] = [];
    let noCapacity = 0;
    const releaseLag: number[] = [];
    // Metered from here: the meter asks DynamoDB Local for each request's capacity, which slows it down (about a
    // fifth on writes), and the setup's figures are times.
    const meter = countRequests(site.storeClient);
    const meterBefore = { ...meter.total };
    const churnStarted = performance.now();
    mark('churn_started');
    const deadline = churnStarted + options.churnSeconds * 1000;
    measuring = true;

    const worker = async (w: number) => {
      let n = w;
      while (performance.now() < deadline) {
        n += options.apiWorkers;
        const org = orgs[n % ORGS]!;
        const token = tokens.get(org);
        const pick = Math.random();
        const mine = owned.filter((o) => o.org === org);
        if (pick < 0.3) {
          // 409 no-capacity is an answer the API gives when every machine of the type is taken or not live.
          const created = await call('create', 'POST', instancePath(org), token, { machineType: typeOf(n) }, [201, 409]);
          if (created.code === 'no-capacity') {
            noCapacity++;
            continue;
          }
          const at = performance.now();
          await until('a churned instance Ready', statusIs(String(created.id), 'Ready'), settleMs, 10);
          createLag.push(performance.now() - at);
          owned.push({ org, id: String(created.id) });
        } else if (pick < 0.6 && mine.length > 0) {
          const victim = mine[Math.floor(Math.random() * mine.length)]!;
          owned.splice(owned.indexOf(victim), 1);
          await call('release', 'DELETE', `${instancePath(org)}/${victim.id}`, token, undefined, [200, 202]);
          const at = performance.now();
          await until('a released instance Terminated', statusIs(victim.id, 'Terminated'), settleMs, 10);
          releaseLag.push(performance.now() - at);
        } else if (pick < 0.8) {
          await call('list', 'GET', instancePath(org), token, undefined, [200]);
        } else if (mine.length > 0) {
          await call('get', 'GET', `${instancePath(org)}/${mine[Math.floor(Math.random() * mine.length)]!.id}`, token, undefined, [200]);
        }
      }
    };

    const failures: Failure[] = [];
    const failedMachines = new Set<string>();
    const fail = async (k: number) => {
      // A Ready member of a meta-instance on a machine not failed yet: its replacement is what we time. The
      // meta-instances are tried in turn from the k-th; when every one is between members right now (replacements
      // of earlier failures still provisioning), the failure waits for one rather than being left out.
      const found = await until(
        `a Ready member to fail (failure ${k + 1})`,
        async () => {
          for (let j = 0; j < metaIds.length; j++) {
            const metaId = metaIds[(k + j) % metaIds.length]!;
            const members = await recordedMembers(observer, metaId);
            const member = members.find((i) => i.status === 'Ready' && !failedMachines.has(i.machineId));
            if (member) return { metaId, members, member };
          }
          return undefined;
        },
        settleMs,
        50,
      );
      const { metaId, members, member } = found;
      // A replacement is a member that did not exist yet: the others of a minNodes > 1 meta-instance do not count.
      const before = new Set(members.map((i) => i.id));
      failedMachines.add(member.machineId);
      const failure: Failure = { machineId: member.machineId, metaInstanceId: metaId, kind: k % 2 === 0 ? 'override' : 'heartbeat' };
      failures.push(failure);
      const t0 = performance.now();
      if (failure.kind === 'override') {
        await call(
          undefined,
          'POST',
          `/admin/machines/${encodeURIComponent(member.machineId)}/health-overrides`,
          admin,
          { template: 'degraded', message: 'scale soak: simulated failure' },
          [200, 201],
        );
      } else {
        await call(undefined, 'POST', `/_sim/machines/${encodeURIComponent(member.machineId)}/heartbeat`, undefined, { stopped: true }, [200]);
      }
      const replaced = async () =>
        (await recordedMembers(observer, metaId)).some((i) => !before.has(i.id) && i.status === 'Ready' && !failedMachines.has(i.machineId)) ? true : undefined;
      await until(`a replacement for ${member.machineId} in ${metaId}`, replaced, settleMs, replacementPollMs(options)).then(
        () => (failure.replacedMs = performance.now() - t0),
        (error: unknown) => progress(String(error).split('\n')[0]!),
      );
    };
    // Failures spread over the first two thirds of the churn, so the last ones have time to be replaced in it.
    const failureCount = failuresOf(options);
    const spacingMs = (options.churnSeconds * 1000 * 2) / 3 / failureCount;
    const failing = (async () => {
      const running: Array<Promise<void>> = [];
      for (let k = 0; k < failureCount; k++) {
        await sleep(Math.max(0, churnStarted + k * spacingMs - performance.now()));
        running.push(fail(k));
      }
      await Promise.all(running);
    })();
    await Promise.all([...Array.from({ length: options.apiWorkers }, (_, w) => worker(w)), failing]);
    measuring = false;
    const churnMinutes = (performance.now() - churnStarted) / 60_000;
    mark('churn_over');
    const meterAfter = { ...meter.total };
    progress(`scale: churn over after ${round(churnMinutes * 60, 1)} s; ${failures.length} failures, checking invariants`);

    // ---- quiet, then the invariants over everything the table holds ----
    await site.streamIdle(60_000);
    await sleep(2 * options.sweepIntervalMs);
    await site.streamIdle(60_000);
    const invariants = checkInvariants({ ...(await readBack(observer, orgs)), failures });
    progress('scale: reading the stream for partition heat');
    const heat = await streamHeat(endpoint, tableName, writeTimes ? { writeTimes } : {});

    const allCalls = Object.values(latencies).flat();
    const replacedMs = failures.filter((f) => f.replacedMs !== undefined).map((f) => f.replacedMs!);
    const byKind = (kind: Failure['kind']) => {
      const done = failures.filter((f) => f.kind === kind && f.replacedMs !== undefined).map((f) => f.replacedMs!);
      return { failures: failures.filter((f) => f.kind === kind).length, replaced: done.length, ...(done.length ? summarize(done) : {}) };
    };
    const perMinute = (key: 'readUnits' | 'writeUnits' | 'writes') => round((meterAfter[key] - meterBefore[key]) / churnMinutes, 1);
    return {
      config: {
        ...options,
        failures_planned: failureCount,
        replacement_poll_ms: replacementPollMs(options),
        orgs: ORGS,
        toml: scaleSiteToml(options).trim().split('\n'),
        method: SCALE_SOAK_METHOD,
      },
      setup_s: setupS,
      site_start: {
        unit:
          's: the local site started (machines registered, API answering /health), then the fleet summary counting every ' +
          'machine allocatable (`GET /admin/fleet/summary` every 200 ms; the machines themselves checked once after)',
        site_up_s: siteUpS,
        fleet_allocatable_after_up_s: fleetAllocatableS,
        floor_s: round(floorMs / 1000, 3),
        ratio_to_floor: ratio(fleetAllocatableS * 1000, floorMs),
        goal_ratio_to_floor: SITE_START_GOAL_RATIO,
        floor:
          'the same machine items as the first roster leaves them (live, allocatable), one conditional PutItem each, ' +
          `${SEPARATE_IN_FLIGHT} in flight, on a fresh DynamoDB Local of its own (stopped before the site starts on the part's)`,
      },
      churn_s: round(churnMinutes * 60, 1),
      api: {
        calls: allCalls.length,
        creates_answered_no_capacity: noCapacity,
        answered_throttled_then_retried: throttled,
        all: summarize(allCalls),
        ...Object.fromEntries(Object.entries(latencies).map(([kind, samples]) => [kind, summarize(samples)])),
      },
      reconcile_lag: {
        unit: 'ms from the commit (the API answer, or the failure call) until the reaction is done',
        create_to_ready: summarize(createLag),
        release_to_terminated: summarize(releaseLag),
        failure_to_replacement_ready: { all: replacedMs.length ? summarize(replacedMs) : null, override: byKind('override'), heartbeat: byKind('heartbeat') },
      },
      dynamodb_per_minute: {
        unit: "capacity units (and write requests) per minute of churn, counted on the site store's own client (the idempotency table not included)",
        read_units: perMinute('readUnits'),
        write_units: perMinute('writeUnits'),
        writes: perMinute('writes'),
      },
      failures: { planned: failureCount, injected: failures.length, replaced: replacedMs.length, share_of_fleet: ratio(failures.length, options.machines) },
      invariants,
      partition_heat: {
        window: "the whole soak: registration, the first roster, the standing load, the churn, the quiet after (the site's stream, every record)",
        phases: marks,
        stream_records: heat.records,
        stream_records_unwatched: heat.unwatched,
        ...heatReport(heat.heat, options.machines),
      },
    };
  } finally {
    await site.stop();
  }
}
