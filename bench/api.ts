import { AsyncLocalStorage } from 'node:async_hooks';
import type { LocalSite } from '#local/runner.ts';
import { dueTimes } from '#reconcilers/due-times.ts';
import { fastSiteToml, startBenchSite, warnsOrFails } from './site.ts';
import { createDocumentClient } from '#store/client.ts';
import { DynamoFleetStore } from '#store/dynamo-store.ts';
import { countRequests, snapshot } from './counter.ts';
import { settle, subtractCost, type Cost } from './stats.ts';

export const API_MACHINES = 64;
export const MACHINE_TYPE = 'gb200';
export const ORG = 'bench';
/** The tenant who creates and releases. */
export const TENANT = 'bench-user';

/**
 * A test-like site (fast simulator, retry delays as in the tests) with 64 gb200 machines. Two departures from the
 * test config, both to keep the measured windows free of background work rather than to make anything cheaper:
 * the simulated agent beats once at start and not again during the run (interval 600 s, timeout 3600 s; the
 * heartbeat's own cost is measured separately), and the safety-net sweep runs once a minute (it only reads the
 * due index; stream reactions do the work).
 */
export const apiSiteToml = fastSiteToml({
  name: 'bench',
  machineType: MACHINE_TYPE,
  machines: API_MACHINES,
  racks: 4,
  heartbeatIntervalSeconds: 600,
  heartbeatTimeoutSeconds: 3600,
});
export const API_SWEEP_INTERVAL_MS = 60_000;

/** What one API call cost, two ways. */
export interface OperationCost {
  /** The DynamoDB requests the call itself made (attributed through its request context), with their capacity. */
  attributed: Cost;
  /** The store client's metered cost and request counts (counter.ts) before vs after the call: includes anything else that ran meanwhile. */
  meterWindow: Cost;
}

export interface ApiCycle {
  createMs: number;
  releaseMs: number;
  create: OperationCost;
  release: OperationCost;
}

export interface ApiBench {
  site: LocalSite;
  tableName: string;
  /** One round: create (timed), wait until Ready and the site is quiet, release (timed), wait until the machine is back and the site is quiet. */
  cycle(): Promise<ApiCycle>;
  stop(): Promise<void>;
}

/** Quiet means no site request in flight at this many looks in a row, this far apart. */
const QUIET_LOOKS = 4;
const QUIET_LOOK_MS = 3;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function startApiBench(endpoint: string, id: string, settleMs: number, progress: (line: string) => void): Promise<ApiBench> {
  const tableName = `bench-${id}`;
  const { site, siteLog } = await startBenchSite({
    endpoint,
    tableName,
    toml: apiSiteToml,
    sweepIntervalMs: API_SWEEP_INTERVAL_MS,
    onLine: (line) => (warnsOrFails(line) || /failed|SET ASIDE/.test(line)) && progress(`site: ${line}`),
  });
  try {
    const token = await site.issuer.mint({ sub: TENANT, org: ORG, roles: ['tenant'] }, '2h');

    // Which DynamoDB requests belong to which API call. The local server verifies each request's token before it
    // runs the handler, in that request's async context; tagging the context there marks everything the call does,
    // and nothing the stream reactions or the sweep do. Every verification sets the tag, to our call's name for our
    // token and to none for any other (the agent's reports), because the context it lands on can be the keep-alive
    // connection's, which the next request on that connection would otherwise inherit. The wrapper only observes:
    // it calls the issuer's own verify.
    const calls = new AsyncLocalStorage<string | undefined>();
    let currentCall: string | undefined;
    const verify = site.issuer.verify.bind(site.issuer);
    site.issuer.verify = (presented) => {
      calls.enterWith(presented === token ? currentCall : undefined);
      return verify(presented);
    };
    const requests = countRequests(site.storeClient, { tagOf: () => calls.getStore() });
    // Our own reads (waiting for states) go through a separate client, so they never show in the site's figures.
    const observer = new DynamoFleetStore(createDocumentClient(endpoint), tableName, dueTimes);
    const base = `${site.url}/v2/org/${ORG}/nico/instance`;
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const createBody = JSON.stringify({ machineType: MACHINE_TYPE });

    const quiet = async (deadline: number) => {
      for (let calm = 0; calm < QUIET_LOOKS; ) {
        if (Date.now() > deadline) throw new Error(`bench: the site did not go quiet; site log:\n${siteLog.join('\n')}`);
        calm = requests.inFlight() === 0 ? calm + 1 : 0;
        await sleep(QUIET_LOOK_MS);
      }
    };

    const until = async (what: string, check: () => Promise<boolean>, timeoutMs = 15_000) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        // Waiting for the stream also wakes the poller, so reactions run now instead of at its next poll.
        await site.streamIdle(timeoutMs);
        if (await check()) {
          // Whatever the last reaction wrote has been reacted to as well, and nothing the site started (an agent
          // report being answered, say) is still talking to DynamoDB: the site is quiet.
          await site.streamIdle(timeoutMs);
          await quiet(deadline);
          return;
        }
        if (Date.now() > deadline) throw new Error(`bench: ${what} within ${timeoutMs} ms; site log:\n${siteLog.join('\n')}`);
        await sleep(2);
      }
    };

    // The agent's first heartbeat makes the registered machines live.
    await until(
      'all machines live after the first heartbeat',
      async () => {
        const page = await observer.listMachines({ limit: 1000 });
        return page.items.length === API_MACHINES && page.items.every((m) => m.heartbeatLive && m.state === 'Ready');
      },
      30_000,
    );

    let callsMade = 0;
    /** One timed HTTP call, tagged; the attributed cost is collected later, once the site is quiet. */
    const call = async (method: string, url: string, body: string | undefined, expect: number) => {
      const tag = `${method}#${++callsMade}`;
      currentCall = tag;
      await settle(settleMs);
      const before = snapshot(requests);
      const t0 = performance.now();
      const response = await fetch(url, {
        method,
        headers: body === undefined ? { authorization: headers.authorization } : headers,
        ...(body === undefined ? {} : { body }),
      });
      const text = await response.text();
      const ms = performance.now() - t0;
      const meterWindow = subtractCost(snapshot(requests), before);
      currentCall = undefined;
      if (response.status !== expect) throw new Error(`bench: ${method} ${url} answered ${response.status}: ${text}`);
      return { tag, ms, meterWindow, body: text };
    };

    const cycle = async (): Promise<ApiCycle> => {
      const created = await call('POST', base, createBody, 201);
      const instance = JSON.parse(created.body) as { id: string; machineId: string };
      await until(`instance ${instance.id} Ready`, async () => (await observer.getInstance(instance.id))?.status === 'Ready');
      const createAttributed = requests.take(created.tag);

      const released = await call('DELETE', `${base}/${encodeURIComponent(instance.id)}`, undefined, 202);
      await until(`machine ${instance.machineId} back in the pool`, async () => {
        const machine = await observer.getMachine(instance.machineId);
        return machine?.state === 'Ready' && (await observer.getInstance(instance.id))?.status === 'Terminated';
      });
      const releaseAttributed = requests.take(released.tag);
      if (Object.keys(createAttributed.requests).length === 0 || Object.keys(releaseAttributed.requests).length === 0) {
        throw new Error('bench: no DynamoDB request was attributed to an API call; the token-verification hook no longer sees the calls');
      }
      return {
        createMs: created.ms,
        releaseMs: released.ms,
        create: { attributed: createAttributed, meterWindow: created.meterWindow },
        release: { attributed: releaseAttributed, meterWindow: released.meterWindow },
      };
    };

    return {
      site,
      tableName,
      cycle,
      stop: () => site.stop(),
    };
  } catch (error) {
    await site.stop();
    throw error;
  }
}
