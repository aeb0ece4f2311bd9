import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { afterNextSweepWithinMs, reconcilerRunMs, sweepWithinMs } from '#test/support/bounds.ts';
import { startTestSite, TEST_SWEEP_INTERVAL_MS, testConfig, type TestSite } from '#test/support/local-site.ts';

// The create-retry rule (functions/site/create-retry.ts, API.md "Site agent") end to end: the simulated agent is
// told what to answer through /_sim/faults, and each case checks what the agent received (/_sim/requests) and what
// the instance says afterwards. Retried: 500, 503, network failures, with backoff base × attempt and `<name>-r<N>`
// names once an HTTP error came back. Never retried: 502, 504, 409 (and other 4xx), timeouts. Three attempts.

const BASE_DELAY_MS = 100;
const TIMEOUT_MS = 1000;

const config = testConfig(`
[instance_create_retry]
max_attempts = 3
base_delay_ms = ${BASE_DELAY_MS}
timeout_ms = ${TIMEOUT_MS}
[simulator]
machines = [ { type = "gb200", count = 4, racks = 2 } ]
heartbeat_interval_seconds = 0.2
provision_ms = 20
cleanup_ms = 20
`);
// The create call, retries and all, is one stream reaction.
const CREATED_WITHIN_MS = reconcilerRunMs(config);
// The DELETE goes out in a stream reaction; the agent reports within the report timeout, or a sweep after it asks.
const CLEANED_WITHIN_MS = reconcilerRunMs(config) + config.site_agent.report_timeout_seconds * 1000 + sweepWithinMs(config, TEST_SWEEP_INTERVAL_MS);
// Allocatable once the agent's first beat has been through the stream.
const FLEET_READY_WITHIN_MS = config.simulator.heartbeat_interval_seconds * 1000 + reconcilerRunMs(config);
const CASE_WITHIN_MS = CREATED_WITHIN_MS + CLEANED_WITHIN_MS + afterNextSweepWithinMs(config, TEST_SWEEP_INTERVAL_MS);

let site: TestSite;
let tenant: string;
let admin: string;

beforeAll(async () => {
  site = await startTestSite({ config });
  tenant = await site.token('acme', ['tenant']);
  admin = await site.token('provider', ['provider-admin']);
  const allocatable = async () => (await site.call('GET', '/admin/machines?allocatable=true', { token: admin })).body.items.length;
  await site.eventually(async () => (await allocatable()) === 4, FLEET_READY_WITHIN_MS);
});
afterAll(async () => site?.stop());

type Fault = number | 'network' | 'timeout';
interface Received {
  name: string;
  instanceId: string;
  clientToken: string;
  outcome: Fault;
  at: string;
}

/** Queue the agent's answers, create an instance, and wait until its create is over (Ready or Failed). */
async function createThrough(faults: Fault[], name: string) {
  expect((await site.call('DELETE', '/_sim/faults')).status).toBe(204);
  if (faults.length > 0) expect((await site.call('POST', '/_sim/faults', { body: { op: 'create', outcomes: faults } })).status).toBe(200);
  const created = await site.call('POST', '/v2/org/acme/nico/instance', { token: tenant, body: { machineType: 'gb200', name } });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const instance = await site.eventually(async () => {
    const { body } = await site.call('GET', `/v2/org/acme/nico/instance/${created.body.id}`, { token: tenant });
    return body.status === 'Ready' || body.status === 'Failed' ? body : undefined;
  }, CREATED_WITHIN_MS);
  const received = ((await site.call('GET', '/_sim/requests')).body.items as Received[]).filter((r) => r.instanceId === instance.id);
  return { instance, received };
}

/** Give the machine back so the next case finds capacity: release a Ready instance; a Failed one is cleaned up anyway. */
async function giveBack(instance: { id: string; status: string; machineId: string }) {
  if (instance.status === 'Ready') expect((await site.call('DELETE', `/v2/org/acme/nico/instance/${instance.id}`, { token: tenant })).status).toBe(202);
  await site.eventually(async () => {
    const { body } = await site.call('GET', `/admin/machines/${instance.machineId}`, { token: admin });
    return body.state === 'Ready' && body.instanceId === undefined;
  }, CLEANED_WITHIN_MS);
}

async function history(machineId: string) {
  return (await site.call('GET', `/admin/machines/${machineId}/history?limit=500`, { token: admin })).body.items as Array<{
    action: string;
    instanceId?: string;
    message?: string;
  }>;
}

interface Case {
  faults: Fault[];
  status: 'Ready' | 'Failed';
  /** Name and outcome of every create the agent received, in order. */
  received: Array<[suffix: string, outcome: Fault]>;
  /** The instance's failureReason, for a Failed one. */
  reason?: RegExp;
}

const cases: Record<string, Case> = {
  '503 then success': {
    faults: [503],
    status: 'Ready',
    received: [
      ['', 503],
      ['-r2', 201],
    ],
  },
  '503, 503 then success on the last attempt': {
    faults: [503, 503],
    status: 'Ready',
    received: [
      ['', 503],
      ['-r2', 503],
      ['-r3', 201],
    ],
  },
  '500 then success': {
    faults: [500],
    status: 'Ready',
    received: [
      ['', 500],
      ['-r2', 201],
    ],
  },
  '500 three times: gives up': {
    faults: [500, 500, 500],
    status: 'Failed',
    received: [
      ['', 500],
      ['-r2', 500],
      ['-r3', 500],
    ],
    reason: /^site agent answered 500 Internal Server Error \(simulated_fault\) on attempt 3 \(gave up after 3 attempts\)$/,
  },
  '504: never retried': {
    faults: [504],
    status: 'Failed',
    received: [['', 504]],
    reason: /^site agent answered 504 Gateway Timeout \(simulated_fault\) on attempt 1 \(not retried: the create may have committed\)$/,
  },
  '502: never retried': {
    faults: [502],
    status: 'Failed',
    received: [['', 502]],
    reason: /^site agent answered 502 Bad Gateway \(simulated_fault\) on attempt 1 \(not retried: the create may have committed\)$/,
  },
  '409: never retried': {
    faults: [409],
    status: 'Failed',
    received: [['', 409]],
    reason: /^site agent answered 409 Conflict \(name_conflict\) on attempt 1 \(not retried: the name is already in use at the site\)$/,
  },
  '400: never retried': {
    faults: [400],
    status: 'Failed',
    received: [['', 400]],
    reason: /^site agent answered 400 Bad Request \(simulated_fault\) on attempt 1 \(not retried: the agent rejected the request\)$/,
  },
  'network failure then success: the plain name again, no HTTP error came back': {
    faults: ['network'],
    status: 'Ready',
    received: [
      ['', 'network'],
      ['', 201],
    ],
  },
  'network failure three times: gives up': {
    faults: ['network', 'network', 'network'],
    status: 'Failed',
    received: [
      ['', 'network'],
      ['', 'network'],
      ['', 'network'],
    ],
    reason: /^site agent unreachable on attempt 3: .+ \(gave up after 3 attempts\)$/,
  },
  'timeout: never retried': {
    faults: ['timeout'],
    status: 'Failed',
    received: [['', 'timeout']],
    reason: new RegExp(`^site agent did not answer within ${TIMEOUT_MS} ms on attempt 1 \\(not retried: the instance may still be provisioning\\)$`),
  },
  'network, then 500, then success: -r3 once an HTTP error came back': {
    faults: ['network', 500],
    status: 'Ready',
    received: [
      ['', 'network'],
      ['', 500],
      ['-r3', 201],
    ],
  },
  '500, then network, then success': {
    faults: [500, 'network'],
    status: 'Ready',
    received: [
      ['', 500],
      ['-r2', 'network'],
      ['-r3', 201],
    ],
  },
  '503, then 502: stops at the gateway error': {
    faults: [503, 502],
    status: 'Failed',
    received: [
      ['', 503],
      ['-r2', 502],
    ],
    reason: /on attempt 2 \(not retried: the create may have committed\)$/,
  },
  '500, then 409: stops at the conflict': {
    faults: [500, 409],
    status: 'Failed',
    received: [
      ['', 500],
      ['-r2', 409],
    ],
    reason: /^site agent answered 409 Conflict \(name_conflict\) on attempt 2 /,
  },
  'network, then timeout: stops at the timeout': {
    faults: ['network', 'timeout'],
    status: 'Failed',
    received: [
      ['', 'network'],
      ['', 'timeout'],
    ],
    reason: /did not answer within \d+ ms on attempt 2 /,
  },
  '503, then 504: stops at the gateway error': {
    faults: [503, 504],
    status: 'Failed',
    received: [
      ['', 503],
      ['-r2', 504],
    ],
    reason: /^site agent answered 504 Gateway Timeout \(simulated_fault\) on attempt 2 /,
  },
};

describe.each(Object.entries(cases))('agent answers %s', (label, expected) => {
  it(`ends ${expected.status} with the attempts, names and reason the rule gives`, { timeout: CASE_WITHIN_MS }, async () => {
    const name = `cr-${Object.keys(cases).indexOf(label)}`;
    const { instance, received } = await createThrough(expected.faults, name);

    expect(received.map((r) => [r.name, r.outcome])).toEqual(expected.received.map(([suffix, outcome]) => [`${name}${suffix}`, outcome]));
    // One create, retried: the same client token on every attempt.
    expect(new Set(received.map((r) => r.clientToken))).toEqual(new Set([received[0]!.clientToken]));
    expect(instance.status).toBe(expected.status);
    expect(instance.createAttempts).toBe(received.length);
    // The name that succeeded or, for a failure, the one last sent: what the cleanup must delete at the site.
    expect(instance.siteName).toBe(received.at(-1)!.name);
    if (expected.status === 'Ready') expect(instance.failureReason).toBeUndefined();
    else expect(instance.failureReason).toMatch(expected.reason!);
    // Backoff: base × attempt before each retry (a lower bound; the clock only adds).
    const gaps = received.slice(1).map((r, i) => Date.parse(r.at) - Date.parse(received[i]!.at));
    for (const [i, gap] of gaps.entries()) expect(gap, `gap before attempt ${i + 2}`).toBeGreaterThanOrEqual(BASE_DELAY_MS * (i + 1));

    await giveBack(instance);
    // Only a gateway error may leave the instance at the site (the simulator keeps the name); the cleanup found
    // and removed exactly that, or was told the agent holds nothing.
    const mayBeAtSite = expected.status === 'Ready' || [502, 504].includes(received.at(-1)!.outcome as number);
    const cleanup = (await history(instance.machineId)).find((h) => h.action === 'cleanup-succeeded' && h.instanceId === instance.id);
    expect(cleanup?.message).toBe(mayBeAtSite ? undefined : 'site agent had no such instance');
  });
});

describe('after an agent timeout', () => {
  it('the instance stays Failed, its machine is cleaned up and offered again, and nothing retries the create later', { timeout: CASE_WITHIN_MS }, async () => {
    const { instance, received } = await createThrough(['timeout'], 'cr-after-timeout');
    expect(instance).toMatchObject({ status: 'Failed', createAttempts: 1, siteName: 'cr-after-timeout' });
    await giveBack(instance);
    const machine = (await site.call('GET', `/admin/machines/${instance.machineId}`, { token: admin })).body;
    expect(machine).toMatchObject({ state: 'Ready', allocatable: true });
    expect((await history(instance.machineId)).filter((h) => h.instanceId === instance.id).map((h) => h.action)).toEqual(
      expect.arrayContaining(['instance-created', 'instance-create-failed', 'cleanup-succeeded']),
    );
    // A whole sweep after the create failed, with the stream reactions to what it wrote: the create is not sent again.
    await site.afterNextSweep();
    const later = ((await site.call('GET', '/_sim/requests')).body.items as Received[]).filter((r) => r.instanceId === instance.id);
    expect(later).toEqual(received);
    const { body } = await site.call('GET', `/v2/org/acme/nico/instance/${instance.id}`, { token: tenant });
    expect(body).toMatchObject({ status: 'Failed', createAttempts: 1 });
  });
});
