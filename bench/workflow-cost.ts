// What one workflow costs in DynamoDB requests and capacity units, from the request that starts
// it until the site is quiet (the API call, the site agent's reports, every stream reaction and cascade), and
// whether one stream batch reconciles an entity more than once.

import { AsyncLocalStorage } from 'node:async_hooks';
import { dueTimes } from '#reconcilers/due-times.ts';
import { DynamoDBStreamsClient, GetRecordsCommand } from '@aws-sdk/client-dynamodb-streams';
import type { Instance } from '#domain/core/model.ts';
import type { LocalSite } from '#local/runner.ts';
import { fastSiteToml, freeMachines, startBenchSite, warnsOrFails } from './site.ts';
import { createDocumentClient } from '#store/client.ts';
import { DynamoFleetStore } from '#store/dynamo-store.ts';
import { recordedMembers } from '#test/support/meta-members.ts';
import { countRequests, snapshot } from './counter.ts';
import { round, subtractCost } from './stats.ts';
import { BASELINE_REQUESTS, summarizeWorkflow, WORKFLOWS, type Workflow, type WorkflowSample } from './workflow-summary.ts';

export const WORKFLOW_MACHINE_TYPE = 'gb200';
export const WORKFLOW_MACHINES = 8;
const ORG = 'bench-wf';

/**
 * 8 gb200 in 2 racks, the simulator fast (20 ms to provision or clean). The agent beats once at start and not
 * again (600 s beat, 3600 s timeout), so no heartbeat falls in a measured window; the heartbeat's cost is the
 * heartbeat part's.
 */
export const workflowSiteToml = fastSiteToml({
  name: 'bench-workflows',
  machineType: WORKFLOW_MACHINE_TYPE,
  machines: WORKFLOW_MACHINES,
  racks: 2,
  heartbeatIntervalSeconds: 600,
  heartbeatTimeoutSeconds: 3600,
});

export interface WorkflowCostOptions {
  /** Measured runs of each workflow. */
  trials: number;
  /** Runs of each workflow before those, not counted (first writes of aggregates, caches). */
  warmup: number;
  /** The sweep's schedule: long, so the figures are the stream's work (the sweep is counted if it ever ticks). */
  sweepIntervalMs: number;
  /** The site counts as quiet once no DynamoDB request was sent or in flight for this long after the stream drained. */
  quietMs: number;
}

export const defaultWorkflowCostOptions: WorkflowCostOptions = { trials: 5, warmup: 1, sweepIntervalMs: 600_000, quietMs: 300 };

// ---- stream batches, seen from outside the poller ----------------------------------------------------------------
// The local poller reads a shard with GetRecords and hands what it got to the stream handler before it reads again,
// one call at a time (local/stream-poller.ts pump/deliver), so every request the site sends between one non-empty
// GetRecords and the next, other than an API call's, belongs to the handler call of that batch. The poller's
// streams client is its own, so the bench wraps the class's send once, in this process only; it only observes.
let batchSeq = 0;
let streamsWrapped = false;
function watchStreamBatches(): void {
  if (streamsWrapped) return;
  streamsWrapped = true;
  const proto = DynamoDBStreamsClient.prototype as unknown as { send: (...args: unknown[]) => Promise<unknown> };
  const send = proto.send;
  proto.send = async function (this: unknown, ...args: unknown[]) {
    const out = (await send.apply(this, args)) as { Records?: unknown[] } | undefined;
    if (args[0] instanceof GetRecordsCommand && (out?.Records?.length ?? 0) > 0) batchSeq++;
    return out;
  };
}

type Source = 'call' | 'agent';

/** Per trial: what each stream batch reconciled (the runner's `reconciled` log line: one per committing pass) and read. */
interface BatchLog {
  reconciled: Map<number, Map<string, number>>;
  reads: Map<number, Map<string, number>>;
}

const LIVE: ReadonlySet<Instance['status']> = new Set(['Provisioning', 'Ready', 'Repairing']);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const bump = <K>(map: Map<K, number>, key: K) => map.set(key, (map.get(key) ?? 0) + 1);

/** The claims of a JWT, unverified: only to tell the site agent's calls from the bench's. */
function claimsOf(token: string): { roles?: string[] } {
  try {
    return JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { roles?: string[] };
  } catch {
    return {};
  }
}

interface WorkflowSite {
  site: LocalSite;
  measure(workflow: Workflow): Promise<WorkflowSample>;
  stop(): Promise<void>;
}

async function startWorkflowSite(endpoint: string, tableName: string, options: WorkflowCostOptions, progress: (line: string) => void): Promise<WorkflowSite> {
  watchStreamBatches();
  let batchLog: BatchLog | undefined;
  const { site, siteLog } = await startBenchSite({
    endpoint,
    tableName,
    toml: workflowSiteToml,
    sweepIntervalMs: options.sweepIntervalMs,
    onLine: (line) => {
      if (warnsOrFails(line) || /"level":"(WARN|ERROR)"|stream-poller: .*failed|SET ASIDE/.test(line)) progress(`workflow site: ${line}`);
      // The runner logs `reconciled` for each pass that committed a change; only stream and sweep runs do.
      if (batchLog && line.includes('"reconciled"')) {
        try {
          const entry = JSON.parse(line) as { message?: string; entity?: string; id?: string };
          if (entry.message === 'reconciled') {
            const perBatch = batchLog.reconciled.get(batchSeq) ?? new Map<string, number>();
            batchLog.reconciled.set(batchSeq, perBatch);
            bump(perBatch, `${entry.entity}#${entry.id}`);
          }
        } catch {
          // not a controller line
        }
      }
    },
  });
  try {
    const tenant = await site.issuer.mint({ sub: 'bench-tenant', org: ORG, roles: ['tenant'] }, '2h');
    const admin = await site.issuer.mint({ sub: 'bench-admin', org: 'provider', roles: ['provider-admin'] }, '2h');

    // Who sent each request: the local server verifies a call's token in that call's async context before the
    // handler runs, so tagging the context there marks all the call does. Our tokens are the workflow's call; any
    // other is the site agent reporting (creates done, cleanups done). Untagged requests are the stream reactions
    // (and the sweep). Every verification sets the tag, so a keep-alive connection's context never carries an old one.
    const sources = new AsyncLocalStorage<Source>();
    const verify = site.issuer.verify.bind(site.issuer);
    site.issuer.verify = (presented) => {
      sources.enterWith(presented === tenant || presented === admin ? 'call' : claimsOf(presented).roles?.includes('site-agent') ? 'agent' : 'call');
      return verify(presented);
    };
    const requests = countRequests(site.storeClient, { tagOf: () => sources.getStore() });
    // Which items the stream reactions read, per batch: a second read of one item in one batch is a second look.
    site.storeClient.middlewareStack.add(
      (next, context) => async (args) => {
        if (batchLog && sources.getStore() === undefined && context.commandName === 'GetItemCommand') {
          // The key as the document client was given it, or already marshalled ({ S: ... }).
          const part = (v: unknown) => (typeof v === 'object' && v !== null && 'S' in v ? String((v as { S: unknown }).S) : String(v));
          const key = (args.input as { Key?: { pk?: unknown; sk?: unknown } }).Key;
          const perBatch = batchLog.reads.get(batchSeq) ?? new Map<string, number>();
          batchLog.reads.set(batchSeq, perBatch);
          bump(perBatch, `${part(key?.pk)}|${part(key?.sk)}`);
        }
        return next(args);
      },
      { step: 'initialize', name: 'fleetward-bench-batch-reads' },
    );
    // Our own reads go through a client of their own, outside the site's meter.
    const observer = new DynamoFleetStore(createDocumentClient(endpoint), tableName, dueTimes);

    const call = async (method: string, path: string, token: string, body: unknown, expect: number[]) => {
      const response = await fetch(`${site.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      if (!expect.includes(response.status)) throw new Error(`bench: ${method} ${path} answered ${response.status}: ${text}`);
      return text ? (JSON.parse(text) as Record<string, unknown>) : {};
    };

    /**
     * Until `check` holds, then until the site is quiet: the stream drained (which also wakes the poller) and no
     * DynamoDB request sent or in flight for `quietMs`, and the stream still drained after that; a late agent
     * report or a reaction to it starts the wait over.
     */
    const until = async (what: string, check: () => Promise<boolean>, timeoutMs = 20_000) => {
      const deadline = Date.now() + timeoutMs;
      const fail = () => new Error(`bench: ${what} within ${timeoutMs} ms; site log:\n${siteLog.join('\n')}`);
      for (;;) {
        await site.streamIdle(timeoutMs);
        if (await check()) break;
        if (Date.now() > deadline) throw fail();
        await sleep(5);
      }
      for (;;) {
        await site.streamIdle(timeoutMs);
        const sent = Object.values(requests.counts).reduce((a, b) => a + b, 0);
        let calm = true;
        const end = Date.now() + options.quietMs;
        while (calm && Date.now() < end) {
          await sleep(10);
          if (requests.inFlight() > 0 || Object.values(requests.counts).reduce((a, b) => a + b, 0) !== sent) calm = false;
        }
        if (calm) return;
        if (Date.now() > deadline) throw fail();
      }
    };

    await until(
      'the fleet live and allocatable',
      async () => {
        const free = await freeMachines(observer, WORKFLOW_MACHINE_TYPE, 100);
        return free.length === WORKFLOW_MACHINES && free.every((m) => m.heartbeatLive);
      },
      30_000,
    );

    const instances = `/v2/org/${ORG}/nico/instance`;
    let plain: { id: string; machineId: string } | undefined;
    let meta: { id: string; failed?: { machineId: string; memberId: string } } | undefined;

    /** The workflow's steps: the call that starts it and what "done" means. */
    const steps: Record<Workflow, () => Promise<() => Promise<boolean>>> = {
      create_to_ready: async () => {
        const created = await call('POST', instances, tenant, { machineType: WORKFLOW_MACHINE_TYPE }, [201]);
        const instance = { id: String(created.id), machineId: String(created.machineId) };
        plain = instance;
        return async () => (await observer.getInstance(instance.id))?.status === 'Ready';
      },
      release_to_clean: async () => {
        const instance = plain;
        if (!instance) throw new Error('bench: release_to_clean runs after create_to_ready');
        plain = undefined;
        await call('DELETE', `${instances}/${encodeURIComponent(instance.id)}`, tenant, undefined, [202]);
        return async () => {
          const [machine, gone] = await Promise.all([observer.getMachine(instance.machineId), observer.getInstance(instance.id)]);
          return gone?.status === 'Terminated' && machine?.state === 'Ready' && !machine.instanceId;
        };
      },
      member_replacement: async () => {
        if (!meta) throw new Error('bench: no meta-instance');
        const members = (await recordedMembers(observer, meta.id)).filter((i) => LIVE.has(i.status));
        const victim = members[0]!;
        meta.failed = { machineId: victim.machineId, memberId: victim.id };
        const { id } = meta;
        await call(
          'POST',
          `/admin/machines/${encodeURIComponent(victim.machineId)}/health-overrides`,
          admin,
          { template: 'degraded', message: 'bench: simulated failure' },
          [200, 201],
        );
        return async () => {
          const [current, live, old, machine] = await Promise.all([
            observer.getMetaInstance(id),
            recordedMembers(observer, id).then((all) => all.filter((i) => LIVE.has(i.status))),
            observer.getInstance(victim.id),
            observer.getMachine(victim.machineId),
          ]);
          return (
            current?.status === 'Ready' &&
            live.length === 2 &&
            live.every((i) => i.status === 'Ready' && i.machineId !== victim.machineId) &&
            old?.status === 'Terminated' &&
            machine?.state !== 'Cleanup' &&
            !machine?.instanceId
          );
        };
      },
    };

    /** After a replacement: the failed machine back in the pool, not counted in any trial. */
    const undoFailure = async () => {
      const failed = meta?.failed;
      if (!failed) return;
      meta!.failed = undefined;
      await call('DELETE', `/admin/machines/${encodeURIComponent(failed.machineId)}/health-overrides/degraded`, admin, undefined, [200, 204]);
      await until(`machine ${failed.machineId} back in the pool`, async () => {
        const machine = await observer.getMachine(failed.machineId);
        return machine?.state === 'Ready' && !machine.instanceId && machine.healthOverrides.length === 0;
      });
    };

    const measure = async (workflow: Workflow): Promise<WorkflowSample> => {
      if (workflow === 'member_replacement' && !meta) {
        // minNodes 2 on an idle site; placed and Ready before the first trial, not counted.
        const created = await call('POST', `/v2/org/${ORG}/nico/meta-instance`, tenant, { machineType: WORKFLOW_MACHINE_TYPE, minNodes: 2 }, [201]);
        const id = String(created.id);
        meta = { id };
        await until('the meta-instance Ready with 2 Ready members', async () => {
          const [current, live] = await Promise.all([
            observer.getMetaInstance(id),
            recordedMembers(observer, id).then((all) => all.filter((i) => LIVE.has(i.status))),
          ]);
          return current?.status === 'Ready' && live.length === 2 && live.every((i) => i.status === 'Ready');
        });
      }
      requests.take('call');
      requests.take('agent');
      const log: BatchLog = { reconciled: new Map(), reads: new Map() };
      const before = snapshot(requests);
      const batchesBefore = batchSeq;
      batchLog = log;
      const t0 = performance.now();
      // ---- measured: from the call that starts the workflow until the site is quiet ----
      const done = await steps[workflow]();
      await until(`${workflow} done`, done);
      const ms = performance.now() - t0;
      batchLog = undefined;
      const total = subtractCost(snapshot(requests), before);
      const callCost = requests.take('call');
      const agentCost = requests.take('agent');
      const reactions = subtractCost(subtractCost(total, callCost), agentCost);
      if (workflow === 'member_replacement') await undoFailure();
      const more = <T>(perBatch: Map<number, Map<string, number>>, make: (batch: number, key: string, n: number) => T) =>
        [...perBatch].flatMap(([batch, counts]) => [...counts].filter(([, n]) => n > 1).map(([key, n]) => make(batch - batchesBefore, key, n)));
      return {
        ms,
        total,
        by_source: { call: callCost, agent: agentCost, reactions },
        stream_batches: batchSeq - batchesBefore,
        // Batch 0 is "before the first batch of the window": the sweep or a leftover, never a stream batch of ours.
        reconciled_more_than_once: more(log.reconciled, (batch, entity, passes) => ({ batch, entity, passes })),
        read_more_than_once: more(log.reads, (batch, key, reads) => ({ batch, key, reads })),
      };
    };

    return { site, measure, stop: () => site.stop() };
  } catch (error) {
    await site.stop();
    throw error;
  }
}

/** Create → Ready and release → clean in turn, then member replacements, on one site; warm-ups first, not counted. */
export async function workflowCost(endpoint: string, id: string, options: WorkflowCostOptions, progress: (line: string) => void) {
  const started = performance.now();
  const samples: Record<Workflow, WorkflowSample[]> = { create_to_ready: [], release_to_clean: [], member_replacement: [] };
  const site = await startWorkflowSite(endpoint, `bench-wf-${id}`, options, progress);
  try {
    progress(`workflows: ${options.warmup} warm-up and ${options.trials} measured create/release rounds`);
    for (let i = 0; i < options.warmup + options.trials; i++) {
      const create = await site.measure('create_to_ready');
      const release = await site.measure('release_to_clean');
      if (i >= options.warmup) {
        samples.create_to_ready.push(create);
        samples.release_to_clean.push(release);
      }
    }
    progress(`workflows: ${options.warmup} warm-up and ${options.trials} measured member replacements`);
    for (let i = 0; i < options.warmup + options.trials; i++) {
      const replaced = await site.measure('member_replacement');
      if (i >= options.warmup) samples.member_replacement.push(replaced);
    }
  } finally {
    await site.stop();
  }
  const workflows = Object.fromEntries(WORKFLOWS.map((w) => [w, summarizeWorkflow(w, samples[w])])) as Record<Workflow, ReturnType<typeof summarizeWorkflow>>;
  return {
    wall_time: { unit: 's', value: round((performance.now() - started) / 1000, 1) },
    config: {
      trials: options.trials,
      warmup: options.warmup,
      machines: WORKFLOW_MACHINES,
      machine_type: WORKFLOW_MACHINE_TYPE,
      sweep_interval_ms: options.sweepIntervalMs,
      quiet_ms: options.quietMs,
      toml: workflowSiteToml.trim().split('\n'),
      baseline: {
        requests: BASELINE_REQUESTS,
        source:
          'measured before the reconciler registry (commit 1341d3a): every DynamoDB ' +
          'request until the site went quiet, median of 5; capacity units not recorded',
      },
      method:
        "one local site (API, stream poller, sweep timer, simulated agent) on DynamoDB Local; every request the site store's client sends is counted " +
        '(bench/counter.ts), from the call that starts the workflow until the condition holds and the site is quiet (stream drained, then no request ' +
        'for quiet_ms). create_to_ready: POST instance until Ready; release_to_clean: DELETE it until Terminated and its machine Ready and free; ' +
        "member_replacement: a minNodes-2 meta-instance, a degraded override on one member's machine (POST /admin/machines/{id}/health-overrides) " +
        'until the meta-instance is Ready with 2 Ready members off that machine, the old member Terminated and its machine out of Cleanup (the ' +
        'override is removed afterwards, not counted). The idempotency table is not touched (no Idempotency-Key is sent).',
      sweep: 'the sweep interval is long, so no sweep normally ticks in a window; if one did, its requests are in reactions',
      batches:
        'a stream batch is what one non-empty GetRecords of the local poller hands to the handler (it reads and delivers one batch ' +
        'at a time); reconciled_more_than_once lists entities the runner logged `reconciled` for more than once in one batch (one ' +
        'line per pass that committed), read_more_than_once items GetItem-read more than once by the reactions in one batch',
    },
    workflows,
    summary: Object.fromEntries(
      WORKFLOWS.map((w) => [
        w,
        {
          requests_median: workflows[w].goal.value,
          goal: workflows[w].goal.goal,
          ratio: workflows[w].goal.ratio,
          read_units_median: workflows[w].read_units.median,
          write_units_median: workflows[w].write_units.median,
        },
      ]),
    ) as Record<Workflow, { requests_median: number; goal: number; ratio: number; read_units_median: number; write_units_median: number }>,
  };
}
