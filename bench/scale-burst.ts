// `scale-burst` part: one org's burst on a nearly full type at site scale (issue 34). On the scale soak's site (half
// gb200, half h100, racks of 20) every gb200 but `free` is held; then, in turn on that same fill, one org sends
// `requests` creates at once and, as the floor, the same creates each by an org of its own (no usage counter shared
// by any two). Afterwards the case that once stayed Placing for over 30 s: older same-rack groups of 20 wait for
// whole racks, one org's burst takes every free machine and is released, and a 2-node meta-instance is timed to Ready.

import { parseSiteConfig } from '#config/site-config.ts';
import { dueTimes } from '#reconcilers/due-times.ts';
import { createDocumentClient } from '#store/client.ts';
import { DynamoFleetStore } from '#store/dynamo-store.ts';
import { inParallel } from '#store/in-parallel.ts';
import { type Answer, ONE_ORG_GOAL_RATIO, sendBurst } from './contention.ts';
import { defaultScaleSoakOptions, scaleSiteToml } from './scale-site.ts';
import { freeMachines, startBenchSite, warnsOrFails } from './site.ts';
import { ratio, round, summarize } from './stats.ts';

export interface ScaleBurstOptions {
  /** The whole site, half of it the burst's type. */
  machines: number;
  /** Machines of the type left free before each burst. */
  free: number;
  requests: number;
  /** Rounds of the two bursts, one of each kind a round. */
  rounds: number;
  /** Same-rack groups of 20 waiting before the 2-node meta-instance is created. */
  waiters: number;
  sweepIntervalMs: number;
}

export const defaultScaleBurstOptions: ScaleBurstOptions = { machines: 4_000, free: 100, requests: 400, rounds: 1, waiters: 5, sweepIntervalMs: 60_000 };

/**
 * The 2-node meta-instance's Placing → Ready after the burst's release, judged against this. Placing a pair on a site
 * with the machines free takes a wake and one placement (well under a second here); the sweep, the fallback when no
 * wake comes, runs every few seconds. The defect kept it waiting for the sweep's backoff, over 30 s; 10 s tells the
 * two apart on a loaded 2-core host and leaves room for a sweep or two.
 */
export const META_AFTER_BURST_GOAL_S = 10;
/** Given up after this: the figure is then reported as not Ready. */
const META_TIMEOUT_MS = 90_000;

const MACHINE_TYPE = 'gb200';
const RACK = 20;
const BURSTER = 'burster';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Kind = 'one-org' | 'an-org-each';

export async function scaleBurst(endpoint: string, id: string, options: ScaleBurstOptions, progress: (line: string) => void) {
  const tableName = `bench-scale-burst-${id}`;
  const siteOptions = { ...defaultScaleSoakOptions, machines: options.machines, sweepIntervalMs: options.sweepIntervalMs };
  const toml = scaleSiteToml(siteOptions);
  const ofType = parseSiteConfig(toml, 'scale burst site').simulator.machines.find((g) => g.type === MACHINE_TYPE)!.count;
  if (ofType <= options.free) throw new Error(`scale-burst: ${ofType} ${MACHINE_TYPE} machines cannot leave ${options.free} free with the rest held`);
  const started = performance.now();
  const since = () => `${round((performance.now() - started) / 1000, 1)} s`;
  const { site, siteLog } = await startBenchSite({
    endpoint,
    tableName,
    toml,
    sweepIntervalMs: options.sweepIntervalMs,
    onLine: (line) => warnsOrFails(line) && progress(`scale-burst site: ${line}`),
  });
  try {
    const observer = new DynamoFleetStore(createDocumentClient(endpoint), tableName, dueTimes);
    const token = (org: string) => site.issuer.mint({ sub: `${org}-tenant`, org, roles: ['tenant'] }, '6h');
    const admin = await site.issuer.mint({ sub: 'scale-burst-admin', org: 'provider', roles: ['provider-admin'] }, '6h');
    const call = async (method: string, path: string, bearer: string, body?: unknown) => {
      const response = await fetch(`${site.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${bearer}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      return { status: response.status, body: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
    };
    const until = async (what: string, check: () => Promise<boolean>, timeoutMs: number, pollMs = 100) => {
      const deadline = Date.now() + timeoutMs;
      while (!(await check())) {
        if (Date.now() > deadline) throw new Error(`scale-burst: ${what} within ${timeoutMs} ms; site log:\n${siteLog.join('\n')}`);
        await sleep(pollMs);
      }
    };
    const freeNow = async () => (await freeMachines(observer, MACHINE_TYPE, ofType + 1)).filter((m) => m.heartbeatLive);
    // Each burst starts on the same fill and a quiet site: exactly `free` live and allocatable, the stream drained.
    const settled = async () => {
      await until(`${options.free} ${MACHINE_TYPE} machines free`, async () => (await freeNow()).length === options.free, 120_000);
      await site.streamIdle(60_000);
    };

    await until(
      'every machine allocatable',
      async () => {
        const summary = await call('GET', '/admin/fleet/summary', admin);
        return summary.body.allocatable === options.machines;
      },
      120_000 + options.machines * 50,
      200,
    );
    progress(`scale-burst: ${options.machines} machines allocatable at ${since()}; holding all but ${options.free} ${MACHINE_TYPE}`);
    const filler = await token('filler');
    await inParallel(
      Array.from({ length: ofType - options.free }, (_, n) => n),
      16,
      async () => {
        // A heartbeat gone stale for a moment on a loaded host leaves the type short: try again.
        for (let tries = 1; ; tries++) {
          const created = await call('POST', '/v2/org/filler/nico/instance', filler, { machineType: MACHINE_TYPE });
          if (created.status === 201) return;
          if (tries >= 30) throw new Error(`scale-burst: filling answered ${created.status}: ${JSON.stringify(created.body)}`);
          await sleep(500);
        }
      },
    );
    await settled();
    progress(`scale-burst: ${ofType - options.free} of ${ofType} ${MACHINE_TYPE} held at ${since()}`);

    const burstTokens = { one: await token(BURSTER), each: await Promise.all(Array.from({ length: options.requests }, (_, i) => token(`burst-${i}`))) };
    const orgOf = (kind: Kind, i: number) => (kind === 'one-org' ? BURSTER : `burst-${i}`);
    const bearerOf = (kind: Kind, i: number) => (kind === 'one-org' ? burstTokens.one : burstTokens.each[i]!);
    const burst = (kind: Kind) =>
      sendBurst({
        requests: Array.from({ length: options.requests }, (_, i) => ({
          url: `${site.url}/v2/org/${orgOf(kind, i)}/nico/instance`,
          headers: { authorization: `Bearer ${bearerOf(kind, i)}`, 'content-type': 'application/json' },
          body: JSON.stringify({ machineType: MACHINE_TYPE, name: `burst-${i}` }),
        })),
      });
    const release = async (kind: Kind, answers: Answer[]) => {
      const won = answers.map((a, i) => ({ a, i })).filter(({ a }) => a.status === 201 && a.id);
      await inParallel(won, 16, async ({ a, i }) => {
        const released = await call('DELETE', `/v2/org/${orgOf(kind, i)}/nico/instance/${a.id}`, bearerOf(kind, i));
        if (released.status !== 200 && released.status !== 202) throw new Error(`scale-burst: release answered ${released.status}`);
      });
    };

    const bursts = new Map<Kind, Answer[][]>([
      ['one-org', []],
      ['an-org-each', []],
    ]);
    for (let r = 0; r < options.rounds; r++) {
      // The kinds take turns, each round starting with the other, so that the host's other work falls on both alike.
      const order: Kind[] = r % 2 === 0 ? ['an-org-each', 'one-org'] : ['one-org', 'an-org-each'];
      for (const kind of order) {
        const answers = await burst(kind);
        bursts.get(kind)!.push(answers);
        const p99 = summarize(answers.map((a) => a.ms)).p99;
        progress(`scale-burst: round ${r + 1} ${kind}: ${answers.filter((a) => a.status === 201).length} created, p99 ${p99} ms, at ${since()}`);
        await release(kind, answers);
        await settled();
      }
    }

    const meta = await metaAfterBurst();
    const one = figuresOf(bursts.get('one-org')!, options);
    const floor = figuresOf(bursts.get('an-org-each')!, options);
    const value = ratio(one.latency.p99, floor.latency.p99);
    return {
      config: {
        ...options,
        machine_type: MACHINE_TYPE,
        machines_of_type: ofType,
        toml: toml.trim().split('\n'),
        method:
          `the scale soak's site; every ${MACHINE_TYPE} but ${options.free} held by one filler org, the stream drained. Each round sends ` +
          `${options.requests} creates at once from a worker thread, one org's and the floor's (each create another org's) in turn on that ` +
          'same fill, each timed from send until its body is read; the winners are released and the fill restored before the next burst',
      },
      one_org: one,
      an_org_each: { unit: 'the floor: the same bursts, each create by another org, so that no two share a usage counter', ...floor },
      one_org_against_floor: {
        figure: 'p99 of the one-org bursts / p99 of the an-org-each bursts',
        value,
        goal: ONE_ORG_GOAL_RATIO,
        meets_goal: value <= ONE_ORG_GOAL_RATIO,
        exactly_the_free_machines_won: one.exact && floor.exact,
      },
      meta_after_burst: meta,
      setup_and_run_s: round((performance.now() - started) / 1000, 1),
    };

    // Same-rack groups of 20 that the free machines cannot place wait first; one org's burst takes every free
    // machine. Two 2-node meta-instances: one created while the burst holds everything (it waits in the queue behind
    // the groups, timed from the release's start), one created as soon as the release has answered (timed from its
    // create: it may be placed at once, or wait for machines still being cleaned). The worse is judged.
    async function metaAfterBurst() {
      const bearer = burstTokens.one;
      const waiterToken = await token('waiter');
      const waiterIds: string[] = [];
      for (let w = 0; w < options.waiters; w++) {
        const created = await call('POST', '/v2/org/waiter/nico/meta-instance', waiterToken, {
          machineType: MACHINE_TYPE,
          minNodes: RACK,
          placement: { sameRack: true },
        });
        if (created.status !== 201 && created.status !== 202)
          throw new Error(`scale-burst: a waiting group answered ${created.status}: ${JSON.stringify(created.body)}`);
        waiterIds.push(String(created.body.id));
      }
      const waiterStatuses = async () => Promise.all(waiterIds.map(async (w) => (await observer.getMetaInstance(w))?.status ?? 'missing'));
      const createPair = async () => {
        const pair = await call('POST', `/v2/org/${BURSTER}/nico/meta-instance`, bearer, { machineType: MACHINE_TYPE, minNodes: 2 });
        if (pair.status !== 201 && pair.status !== 202)
          throw new Error(`scale-burst: a 2-node meta-instance answered ${pair.status}: ${JSON.stringify(pair.body)}`);
        return { id: String(pair.body.id), answered: String(pair.body.status) };
      };
      const readyS = async (pairId: string, from: number) => {
        while (performance.now() - from < META_TIMEOUT_MS) {
          if ((await observer.getMetaInstance(pairId))?.status === 'Ready') return round((performance.now() - from) / 1000, 2);
          await sleep(50);
        }
        return null;
      };
      const answers = await burst('one-org');
      const won = answers.filter((a) => a.status === 201).map((a) => a.id!);
      await until('the burst Ready', async () => (await Promise.all(won.map((w) => observer.getInstance(w)))).every((i) => i?.status === 'Ready'), 60_000);
      const queued = await createPair();
      // Its own first placement done (nothing free), the queued pair can be reached only by a freed machine's wake
      // or, later, the sweep: the path that once left it Placing for over 30 s.
      await site.streamIdle(60_000);
      const queuedBefore = await observer.getMetaInstance(queued.id);
      const waitingBefore = await waiterStatuses();
      const releaseStarted = performance.now();
      await release('one-org', answers);
      const afterCreated = performance.now();
      const after = await createPair();
      const [queuedS, afterS] = await Promise.all([readyS(queued.id, releaseStarted), readyS(after.id, afterCreated)]);
      const worst = queuedS === null || afterS === null ? null : Math.max(queuedS, afterS);
      progress(`scale-burst: 2-node meta-instances after the burst's release: queued ${queuedS ?? 'not Ready'} s, created after ${afterS ?? 'not Ready'} s`);
      return {
        figure: `s until a 2-node meta-instance is Ready after one org's burst of ${won.length} instances is released (the worse of the two below)`,
        burst_created: won.length,
        ready_s: worst,
        queued_during_burst: {
          unit: "s from the release's start",
          ready_s: queuedS,
          answered_status: queued.answered,
          before_release: { status: queuedBefore?.status, placement_error: queuedBefore?.placementError ?? null },
        },
        created_after_release: { unit: 's from its create, sent once every release had answered', ready_s: afterS, answered_status: after.answered },
        goal_s: META_AFTER_BURST_GOAL_S,
        meets_goal: worst !== null && worst <= META_AFTER_BURST_GOAL_S,
        timeout_s: META_TIMEOUT_MS / 1000,
        waiters: { same_rack_groups_of: RACK, before_release: count(waitingBefore), at_end: count(await waiterStatuses()) },
      };
    }
  } finally {
    await site.stop();
  }
}

const count = (statuses: string[]) => Object.fromEntries([...new Set(statuses)].map((s) => [s, statuses.filter((x) => x === s).length]));

function figuresOf(bursts: Answer[][], options: ScaleBurstOptions) {
  const answers = bursts.flat();
  const outcomes: Record<string, number> = {};
  for (const a of answers) {
    const key = a.status === 201 ? '201 created' : `${a.status} ${a.code ?? '(no code)'}`;
    outcomes[key] = (outcomes[key] ?? 0) + 1;
  }
  const perBurst = bursts.map((b) => {
    const machines = b.filter((a) => a.status === 201).map((a) => a.machineId);
    const summary = summarize(b.map((a) => a.ms));
    return {
      created: machines.length,
      refused_no_capacity: b.filter((a) => a.status === 409 && a.code === 'no-capacity').length,
      distinct_machines: new Set(machines).size,
      p50_ms: summary.median,
      p99_ms: summary.p99,
    };
  });
  return {
    latency: summarize(answers.map((a) => a.ms)),
    outcomes: { unit: 'answers, all bursts', ...outcomes },
    bursts: perBurst,
    exact: perBurst.every((b) => b.created === Math.min(options.free, options.requests) && b.refused_no_capacity === options.requests - b.created),
    no_machine_twice: perBurst.every((b) => b.created === b.distinct_machines),
    answered_5xx: answers.filter((a) => a.status >= 500).length,
  };
}
