import { AsyncLocalStorage } from 'node:async_hooks';
import { Worker } from 'node:worker_threads';
import { dueTimes } from '#reconcilers/due-times.ts';
import type { DynamoDbLocal } from '#local/dynamodb-local.ts';
import { fastSiteToml, freeMachines, startBenchSite } from './site.ts';
import { PLACEMENT_TRIES } from '#services/instances.ts';
import { createDocumentClient } from '#store/client.ts';
import { DynamoFleetStore } from '#store/dynamo-store.ts';
import { countRequests } from './counter.ts';
import { watchJitCompilers, type JitShare } from './jvm-compiler.ts';
import { ratio, round, summarize } from './stats.ts';

export interface ContentionOptions {
  machines: number;
  requests: number;
  /** Bursts, each on a fresh site (new tables) so that every burst starts with every machine free. */
  rounds: number;
  /**
   * Bursts before those, reported and not judged: a fresh DynamoDB Local's JIT compilers keep about three quarters
   * of a core busy for its first half-minute or so (each burst reports how much: `dynamodb_local_jit`), which AWS's
   * DynamoDB never makes a create wait for. Three bursts cover that here; after one, the judged bursts still
   * overlapped it and each came out faster than the one before.
   */
  warmupRounds: number;
  /** Bursts after those with every request served as by a Lambda container of its own (reported, not judged). */
  containerRounds: number;
}

export const defaultContentionOptions: ContentionOptions = { machines: 100, requests: 400, rounds: 3, warmupRounds: 3, containerRounds: 1 };

/** The goal: a create answers within this, however many creates contend (p99 of every answer). */
export const CONTENTION_GOAL_P99_MS = 3_000;
/** One org's burst answers within this much of the same burst spread over an org per create (p99 against p99). */
export const ONE_ORG_GOAL_RATIO = 1.2;

const MACHINE_TYPE = 'gb200';
const ORG = 'bench';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * One machine type, the simulator fast; the agent beats every 5 s (30 s timeout) so that its heartbeats, which walk
 * the whole roster, stay a small part of the load the bursts meet.
 */
const contentionSiteToml = (machines: number) =>
  fastSiteToml({ name: 'bench-contention', machineType: MACHINE_TYPE, machines, racks: Math.max(1, Math.ceil(machines / 20)), heartbeatIntervalSeconds: 5 });

export interface Answer {
  ms: number;
  status: number;
  code: string | undefined;
  machineId: string | undefined;
  /** The created instance's id, for a bench that releases the winners. */
  id: string | undefined;
}

/** What bench/burst-client.ts sends, all at once: each body to its own org's URL, with that org's token. */
export interface BurstRequest {
  requests: Array<{ url: string; headers: Record<string, string>; body: string }>;
}

/**
 * Whose creates a burst is: one org's, with no quota or with one that has room for all of them, or each create
 * another org's (the floor: the same creates for the same machines, with no usage counter shared by any two).
 */
export type BurstOrgs = 'one-org' | 'one-org-with-quota' | 'an-org-each';
const BURST_KINDS: readonly BurstOrgs[] = ['an-org-each', 'one-org', 'one-org-with-quota'];

/** The burst's answers, from a worker thread: each create timed from its send until its body is read. */
export function sendBurst(request: BurstRequest): Promise<Answer[]> {
  const client = new Worker(new URL('./burst-client.ts', import.meta.url), { workerData: request });
  return new Promise<Answer[]>((resolve, reject) => {
    client.once('message', resolve);
    client.once('error', reject);
    client.once('exit', (code) => reject(new Error(`bench: the burst client exited (${code}) before it answered`)));
  }).finally(() => client.terminate());
}

interface Burst {
  answers: Answer[];
  /** DynamoDB requests the creates made (attributed through their async context), by command. */
  createRequests: Record<string, number>;
  /** Every DynamoDB request of the site's client during the burst, the stream reactions' and heartbeats' too. */
  siteRequests: Record<string, number>;
  /** What DynamoDB Local's JIT compilers used from the first send until the last answer. */
  jit: JitShare | null;
}

const difference = (after: Record<string, number>, before: Record<string, number>) =>
  Object.fromEntries(
    Object.entries(after)
      .map(([command, n]) => [command, n - (before[command] ?? 0)])
      .filter(([, n]) => n !== 0),
  );
const total = (counts: Record<string, number>) => Object.values(counts).reduce((sum, n) => sum + n, 0);

interface BurstSetting {
  endpoint: string;
  /** DynamoDB Local's java, whose compiler threads are watched. */
  javaPid: number | undefined;
  options: ContentionOptions;
  progress: (line: string) => void;
}

async function burst(
  { endpoint, javaPid, options, progress }: BurstSetting,
  tableName: string,
  containerPerRequest: boolean,
  orgs: BurstOrgs = 'one-org',
): Promise<Burst> {
  const { site, siteLog } = await startBenchSite({
    endpoint,
    tableName,
    toml: contentionSiteToml(options.machines),
    sweepIntervalMs: 60_000,
    containerPerRequest,
  });
  try {
    const observer = new DynamoFleetStore(createDocumentClient(endpoint), tableName, dueTimes);
    const deadline = Date.now() + 60_000;
    for (;;) {
      const free = await freeMachines(observer, MACHINE_TYPE, options.machines + 1);
      if (free.length === options.machines && free.every((m) => m.heartbeatLive)) break;
      if (Date.now() > deadline) throw new Error(`bench: the contention site's machines were not all live within 60 s; site log:\n${siteLog.join('\n')}`);
      await sleep(100);
    }
    const orgOf = (i: number) => (orgs === 'an-org-each' ? `${ORG}-${i}` : ORG);
    const tokens = await Promise.all(
      Array.from({ length: orgs === 'an-org-each' ? options.requests : 1 }, (_, i) =>
        site.issuer.mint({ sub: 'bench-contention', org: orgOf(i), roles: ['tenant'] }, '1h'),
      ),
    );
    if (orgs === 'one-org-with-quota') {
      const admin = await site.issuer.mint({ sub: 'bench-admin', org: 'provider', roles: ['provider-admin'] }, '1h');
      const set = await fetch(`${site.url}/admin/tenants/${ORG}`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
        body: JSON.stringify({ quotas: { [MACHINE_TYPE]: 2 * options.requests } }),
      });
      if (set.status !== 200) throw new Error(`bench: setting the contention org's quota answered ${set.status}: ${await set.text()}`);
    }
    // As in api.ts: the local server verifies each request's token in that request's async context, so marking the
    // context there attributes to the creates exactly the DynamoDB requests they make (and not the agent's reports).
    const calls = new AsyncLocalStorage<string | undefined>();
    const verify = site.issuer.verify.bind(site.issuer);
    const creators = new Set(tokens);
    site.issuer.verify = (presented) => {
      calls.enterWith(creators.has(presented) ? 'create' : undefined);
      return verify(presented);
    };
    const requests = countRequests(site.storeClient, { tagOf: () => calls.getStore() });
    progress(
      `contention: ${options.requests} creates at once on ${options.machines} free machines, ${orgs}` +
        (containerPerRequest ? ', each request a container of its own' : ''),
    );
    const before = { ...requests.counts };
    const burstRequests = Array.from({ length: options.requests }, (_, i) => ({
      url: `${site.url}/v2/org/${orgOf(i)}/nico/instance`,
      headers: { authorization: `Bearer ${tokens[orgs === 'an-org-each' ? i : 0]}`, 'content-type': 'application/json' },
      body: JSON.stringify({ machineType: MACHINE_TYPE, name: `burst-${i}` }),
    }));
    const compiling = watchJitCompilers(javaPid);
    const answers = await sendBurst({ requests: burstRequests });
    return { answers, createRequests: requests.take('create').requests, siteRequests: difference(requests.counts, before), jit: compiling() };
  } finally {
    await site.stop();
  }
}

/**
 * Bursts of concurrent creates for one machine type: how long each answer takes and what it says. The bursts one
 * process serves, as the local site does, are judged; those served as Lambda serves them, each request in a
 * container of its own (no claims in flight shared), are reported beside them.
 */
export async function contentionBench(
  dynamo: Pick<DynamoDbLocal, 'endpoint' | 'javaPid'>,
  id: string,
  options: ContentionOptions,
  progress: (line: string) => void,
) {
  const setting: BurstSetting = { endpoint: dynamo.endpoint, javaPid: dynamo.javaPid, options, progress };
  const warmupBursts: Burst[] = [];
  for (let round = 0; round < options.warmupRounds; round++) warmupBursts.push(await burst(setting, `bench-contention-${id}-w${round}`, false));
  // The kinds take turns in each round, so that whatever else the host does meanwhile falls on all of them alike.
  const byKind = new Map<BurstOrgs, Burst[]>(BURST_KINDS.map((kind) => [kind, []]));
  for (let round = 0; round < options.rounds; round++) {
    for (const kind of BURST_KINDS) byKind.get(kind)!.push(await burst(setting, `bench-contention-${id}-${round}-${kind}`, false, kind));
  }
  const containerBursts: Burst[] = [];
  for (let round = 0; round < options.containerRounds; round++) {
    containerBursts.push(await burst(setting, `bench-contention-${id}-c${round}`, true));
  }
  const judged = figuresOf(byKind.get('one-org')!);
  const withQuota = figuresOf(byKind.get('one-org-with-quota')!);
  const floor = figuresOf(byKind.get('an-org-each')!);
  const worstOneOrgP99 = Math.max(judged.latency.all.p99, withQuota.latency.all.p99);
  const exact = (figures: ReturnType<typeof figuresOf>) =>
    figures.bursts.every((b) => b.created === Math.min(options.machines, options.requests) && b.refused_no_capacity === options.requests - b.created);
  return {
    config: {
      machines: options.machines,
      requests_per_burst: options.requests,
      bursts: options.rounds,
      warmup_bursts: options.warmupRounds,
      container_per_request_bursts: options.containerRounds,
      tries_per_create: PLACEMENT_TRIES,
      site_toml: contentionSiteToml(options.machines).trim().split('\n'),
      method:
        'each burst on a fresh local site (new tables on one DynamoDB Local, its stream log indexed) once every machine is live: all creates sent at once ' +
        "with fetch from a worker thread (the clients off the site's event loop, as on other machines), each timed from send until its body is read; the " +
        'stream reactions provision the winners meanwhile, as they would. Each round sends one burst of each kind in turn: one org with no quota (judged ' +
        'against the goal), one org with a quota that has room for all, and the floor, each create another org',
    },
    ...judged,
    one_org_with_quota: { unit: 'the same bursts by one org whose quota has room for every create', ...withQuota },
    an_org_each: { unit: 'the floor: the same bursts, each create by another org, so that no two share a usage counter', ...floor },
    one_org_against_floor: {
      figure: 'p99 of the one-org bursts (the worse of with and without a quota) / p99 of the an-org-each bursts',
      value: ratio(worstOneOrgP99, floor.latency.all.p99),
      goal: ONE_ORG_GOAL_RATIO,
      meets_goal: ratio(worstOneOrgP99, floor.latency.all.p99) <= ONE_ORG_GOAL_RATIO,
      exactly_the_free_machines_won: exact(judged) && exact(withQuota),
    },
    goal: {
      figure: 'p99 latency of every create answer, ms',
      value: judged.latency.all.p99,
      goal: CONTENTION_GOAL_P99_MS,
      ratio: ratio(judged.latency.all.p99, CONTENTION_GOAL_P99_MS),
      meets_goal: judged.latency.all.p99 <= CONTENTION_GOAL_P99_MS,
    },
    warmup:
      warmupBursts.length === 0
        ? null
        : {
            unit: 'the same bursts, first on a fresh DynamoDB Local (its JVM still compiling): reported, not judged',
            ...figuresOf(warmupBursts),
          },
    container_per_request:
      containerBursts.length === 0
        ? null
        : {
            unit:
              'the same bursts with every request served as by a Lambda container of its own (local/runner.ts containerPerRequest): creates race each ' +
              'other and the version guard decides; not judged',
            ...figuresOf(containerBursts),
          },
  };
}

function figuresOf(bursts: Burst[]) {
  const answers = bursts.flatMap((b) => b.answers);
  const createRequests = bursts.map((b) => total(b.createRequests));
  const outcomes: Record<string, number> = {};
  for (const a of answers) {
    const key = a.status === 201 ? '201 created' : `${a.status} ${a.code ?? '(no code)'}`;
    outcomes[key] = (outcomes[key] ?? 0) + 1;
  }
  const perRound = bursts.map((b) => {
    const machinesTaken = b.answers.filter((a) => a.status === 201).map((a) => a.machineId);
    return {
      created: machinesTaken.length,
      refused_no_capacity: b.answers.filter((a) => a.status === 409 && a.code === 'no-capacity').length,
      distinct_machines: new Set(machinesTaken).size,
      p50_ms: summarize(b.answers.map((a) => a.ms)).median,
      p99_ms: summarize(b.answers.map((a) => a.ms)).p99,
      dynamodb_local_jit: b.jit,
      dynamodb_requests_of_the_creates: b.createRequests,
      dynamodb_requests_of_the_site: b.siteRequests,
    };
  });
  return {
    latency: {
      all: summarize(answers.map((a) => a.ms)),
      created: summarize(answers.filter((a) => a.status === 201).map((a) => a.ms)),
      refused: summarize(answers.filter((a) => a.status !== 201).map((a) => a.ms)),
    },
    outcomes: { unit: 'answers, all bursts', ...outcomes },
    dynamodb_requests_per_create: {
      unit: 'DynamoDB requests made by the creates / creates answered (mean of the bursts)',
      value: round(createRequests.reduce((sum, n) => sum + n, 0) / answers.length, 2),
    },
    bursts: perRound,
    no_machine_twice: perRound.every((r) => r.created === r.distinct_machines),
    answered_5xx: answers.filter((a) => a.status >= 500).length,
    share_created: round(answers.filter((a) => a.status === 201).length / answers.length, 3),
  };
}
