import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseSiteConfig } from '#config/site-config.ts';
import { statusCheckDelayMs } from '#domain/instances/status-checks.ts';
import { createCallMs, sweepWithinMs } from '#test/support/bounds.ts';
import { crashableRunner } from '#test/support/crashable-runner.ts';

// Crash recovery of the local runner (`npm start`): it is killed with SIGKILL, its whole process tree, while each
// workflow is at one of its steps, then started again on the same FLEETWARD_DATA_DIR; each workflow must finish by
// itself and the fleet's invariants hold. The kill comes SETTLE_MS after the last write the test saw acknowledged
// (bar the breaker reset, which it cuts short): DynamoDB Local only promises durability for writes that old
// (docs/guide.md "Durability of the local runner").
//
// The simulated site agent keeps its instances in the data dir across the restart, as a real agent, a process of
// its own, would; cleanups it had under way finish meanwhile and their reports are lost with the controller.
//
// A start of the runner (java included) is the expensive part, so the workflows share one crash, each at its own
// step when it lands.

const SETTLE_MS = 2_000;
const PROVISION_MS = 1_000;
/** Long enough that a cleanup, and a create the agent holds open, are still under way when the kill lands. */
const CLEANUP_MS = 30_000;
const CREATE_TIMEOUT_MS = 20_000;
const REPORT_TIMEOUT_S = 1;
const SWEEP_INTERVAL_S = 1;
const FLEET_SIZE = 12;
const META_NODES = 2;

const SITE = 'crash';
const config = `
[site]
name = "${SITE}"
[instance_create_retry]
max_attempts = 1
timeout_ms = ${CREATE_TIMEOUT_MS}
[site_agent]
report_timeout_seconds = ${REPORT_TIMEOUT_S}
[sweep]
interval_seconds = ${SWEEP_INTERVAL_S}
[repair_storm]
max_quarantines = 1
max_fraction = 1
[simulator]
machines = [ { type = "gb200", count = ${FLEET_SIZE}, racks = 2 } ]
heartbeat_interval_seconds = 0.2
provision_ms = ${PROVISION_MS}
cleanup_ms = ${CLEANUP_MS}
`;

// The bounds, from the config above.
const siteConfig = parseSiteConfig(config);
const SWEEP_INTERVAL_MS = SWEEP_INTERVAL_S * 1000;
/** A step the test set off: one stream reaction, or the next sweep should the reaction fail. */
const STEP_MS = sweepWithinMs(siteConfig, SWEEP_INTERVAL_MS);
/**
 * A cleanup whose report the crash lost is due again at most the report timeout after the agent accepted its DELETE,
 * or the first status check's back-off after a check made before the crash (the crash comes before a second one
 * could be due: checked below). The sweep after that (within two intervals) asks the agent, one call within the
 * agent timeout, and ends the cleanup.
 */
const CLEANUP_DUE_MS = REPORT_TIMEOUT_S * 1000 + SWEEP_INTERVAL_MS + statusCheckDelayMs(1);
const CLEANUP_RECOVERY_MS = CLEANUP_DUE_MS + 2 * SWEEP_INTERVAL_MS + CREATE_TIMEOUT_MS;
/**
 * Any workflow after the restart: the lease it held lapses (a create's, or a cleanup's as above), then the sweep
 * asks the agent and acts on the answer, a create sent again taking the agent's provisioning time.
 */
const RECOVERY_MS = Math.max(createCallMs(siteConfig), CLEANUP_DUE_MS) + 2 * SWEEP_INTERVAL_MS + CREATE_TIMEOUT_MS + createCallMs(siteConfig);
/** How long java and the runner may take to come up: their own time, not the site's. */
const RUNNER_UP_MS = 60_000;
/** A start of the runner: it comes up, then the fleet's first beat is a step. */
const START_MS = RUNNER_UP_MS + STEP_MS;

const crash = crashableRunner({ config, siteName: SITE, runnerUpMs: RUNNER_UP_MS, defaultWaitMs: STEP_MS });
const { site, eventually, as } = crash;
let crashedAt = 0;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function crashAndRestart(): Promise<void> {
  crashedAt = Date.now();
  await crash.kill();
  await crash.start();
}

const instancePath = (id: string) => `/v2/org/acme/nico/instance/${id}`;

async function createInstance(): Promise<{ id: string; machineId: string; siteName: string }> {
  const created = await site().call('POST', '/v2/org/acme/nico/instance', { token: await as('acme', ['tenant']), body: { machineType: 'gb200' } });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body;
}

async function instanceIn(id: string, status: string, withinMs = STEP_MS) {
  const token = await as('acme', ['tenant']);
  return eventually(
    `instance ${id} ${status}`,
    async () => {
      const { body } = await site().call('GET', instancePath(id), { token });
      return body.status === status ? body : undefined;
    },
    withinMs,
  );
}

async function release(id: string, body?: unknown): Promise<void> {
  const released = await site().call('DELETE', instancePath(id), { token: await as('acme', ['tenant']), ...(body ? { body } : {}) });
  expect(released.status, JSON.stringify(released.body)).toBe(202);
}

async function machine(id: string) {
  return (await site().call('GET', `/admin/machines/${id}`, { token: await as('provider', ['provider-admin']) })).body;
}

async function history(machineId: string): Promise<Array<{ action: string; message?: string }>> {
  return (await site().call('GET', `/admin/machines/${machineId}/history?limit=500`, { token: await as('provider', ['provider-admin']) })).body.items;
}

/** What the simulated agent says of an instance: present, cleaning, or absent. */
async function atAgent(siteName: string): Promise<string> {
  const answer = await site().callAgent('GET', `/instances/${encodeURIComponent(siteName)}`);
  if (answer.status === 404) return 'absent';
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return (answer.body as { state: string }).state;
}

/** The creates the agent received for an instance since the runner started. */
async function createsSentFor(instanceId: string): Promise<Array<{ clientToken: string; outcome: number | string }>> {
  const { body } = await site().call('GET', '/_sim/requests');
  return body.items.filter((r: { instanceId: string }) => r.instanceId === instanceId);
}

/** The agent takes the next creates but never answers them: each call is in flight until the controller times out. */
async function holdNextCreates(count: number): Promise<void> {
  expect((await site().call('POST', '/_sim/faults', { body: { op: 'create', outcomes: Array(count).fill('timeout') } })).status).toBe(200);
}

/** No machine held twice, no orphaned meta-instance member, every override with a source. */
async function expectInvariants(): Promise<void> {
  const { machines, instances, metaInstances } = await site().records();
  const byId = new Map(instances.map((i) => [i.id, i]));
  const metaIds = new Set(metaInstances.filter((m) => m.status !== 'Deleted').map((m) => m.id));
  const live = instances.filter((i) => i.status !== 'Terminated' && i.status !== 'Failed');
  const holders = new Map<string, typeof live>();
  for (const i of live) holders.set(i.machineId, [...(holders.get(i.machineId) ?? []), i]);
  for (const [machineId, held] of holders) {
    expect(
      held.map((i) => i.id),
      `machine ${machineId} is held by one instance`,
    ).toHaveLength(1);
    expect(machines.find((m) => m.id === machineId)?.instanceId, `machine ${machineId} names its instance`).toBe(held[0]!.id);
  }
  for (const m of machines) {
    if (m.instanceId) expect(byId.get(m.instanceId)?.machineId, `machine ${m.id}'s instance is on it`).toBe(m.id);
    if (m.boundMetaInstanceId) {
      expect(metaIds.has(m.boundMetaInstanceId), `machine ${m.id} is bound to a live meta-instance`).toBe(true);
      expect(byId.get(m.instanceId ?? '')?.metaInstanceId, `machine ${m.id}'s binding matches its instance`).toBe(m.boundMetaInstanceId);
    }
    for (const override of m.healthOverrides) expect(override.source, `an override of ${m.id} has a source`).toMatch(/^[a-z]+(-[a-z]+)*$/);
  }
  for (const member of live.filter((i) => i.metaInstanceId)) {
    expect(metaIds.has(member.metaInstanceId!), `member ${member.id} belongs to a live meta-instance`).toBe(true);
  }
}

beforeAll(async () => {
  await crash.start();
}, START_MS);

afterAll(() => crash.dispose());

type Placed = { id: string; machineId: string; siteName: string };

/** A meta-instance placed and Ready, and the repair-storm breaker tripped by tenant reports, holding some back. */
async function placeMetaAndTripBreaker(): Promise<{ metaId: string; metaMachines: string[]; heldBack: string[] }> {
  const meta = await site().call('POST', '/v2/org/acme/nico/meta-instance', {
    token: await as('acme', ['tenant']),
    body: { machineType: 'gb200', minNodes: META_NODES },
  });
  expect(meta.status, JSON.stringify(meta.body)).toBe(201);
  const reporters = await Promise.all([0, 1].map(async () => instanceIn((await createInstance()).id, 'Ready')));
  // Past max_quarantines, a tenant report's repair request is held back.
  for (const r of reporters) await release(r.id, { machineHealthIssue: { category: 'hardware', summary: `ECC on ${r.machineId}` } });
  const admin = await as('provider', ['provider-admin']);
  const heldBack = await eventually('the breaker trips', async () => {
    const { body } = await site().call('GET', '/admin/safety', { token: admin });
    return body.repairStorm.state === 'tripped' && body.repairStorm.heldBack.length > 0 ? (body.repairStorm.heldBack as string[]) : undefined;
  });
  const members: Placed[] = await Promise.all(meta.body.instanceIds.map((id: string) => instanceIn(id, 'Ready')));
  return { metaId: meta.body.id, metaMachines: members.map((m) => m.machineId), heldBack };
}

describe('a crash with every workflow at some step', { timeout: RECOVERY_MS + STEP_MS }, () => {
  let created: Placed;
  let inFlight: Placed;
  let inFlightToken: string;
  let released: Placed;
  let cleaning: Placed;
  let metaId: string;
  let failedMachine: string;
  let heldBack: string[];
  let cleaningReleasedAt: number;

  beforeAll(
    async () => {
      const admin = await as('provider', ['provider-admin']);
      const placing = Promise.all([0, 1, 2].map(async () => instanceIn((await createInstance()).id, 'Ready')));
      let metaMachines: string[];
      ({ metaId, metaMachines, heldBack } = await placeMetaAndTripBreaker());
      [released, cleaning, created] = await placing;
      await release(released.id);
      cleaningReleasedAt = Date.now();
      await release(cleaning.id);
      // The agent accepted the DELETE and is sanitizing: its report would come after CLEANUP_MS, too late.
      await eventually('the agent is cleaning', async () => (await atAgent(cleaning.siteName)) === 'cleaning');

      // Two creates the agent will hold open: a tenant's, and a meta-instance's replacement for a failed member.
      await holdNextCreates(2);
      inFlight = await createInstance();
      inFlightToken = (await eventually('the create call is at the agent', async () => (await createsSentFor(inFlight.id))[0])).clientToken;
      failedMachine = metaMachines[0]!;
      expect(
        (await site().call('POST', `/admin/machines/${failedMachine}/health-overrides`, { token: admin, body: { template: 'out-for-repair' } })).status,
      ).toBe(201);
      const replacement = await eventually('a replacement is placed', async () =>
        (await site().records()).instances.find((i) => i.metaInstanceId === metaId && i.replacement),
      );
      await eventually("the replacement's create call is at the agent", async () => (await createsSentFor(replacement.id)).length > 0);
      await sleep(SETTLE_MS);
      // The reset is cut short by the kill wherever it is: a provider finishes it by asking again.
      void site()
        .call('POST', '/admin/safety/repair-storm/reset', { token: admin, body: { applyHeldBack: true } })
        .catch(() => undefined);
      await sleep(50);
      await crashAndRestart();
      // Eight steps in a row at most (the meta-instance's and the tenants' creates wait side by side), then the restart.
    },
    8 * STEP_MS + SETTLE_MS + START_MS,
  );

  it('after create: the instance stays Ready, held by the agent, and is not created again', async () => {
    await instanceIn(created.id, 'Ready');
    expect(await atAgent(created.siteName)).toBe('present');
    // A whole sweep after the restart, which would have sent it again if anything had.
    await site().afterNextSweep(STEP_MS);
    expect(await createsSentFor(created.id)).toEqual([]);
  });

  it('with the create call in flight: the agent, asked, has no such instance, so the create is sent again with the same client token', async () => {
    await instanceIn(inFlight.id, 'Ready', RECOVERY_MS);
    expect(await createsSentFor(inFlight.id)).toEqual([expect.objectContaining({ clientToken: inFlightToken, outcome: 201 })]);
  });

  it('after release: the instance ends and its machine returns to the pool', async () => {
    await instanceIn(released.id, 'Terminated', RECOVERY_MS);
    await eventually('the released machine is Ready', async () => (await machine(released.machineId)).state === 'Ready', RECOVERY_MS);
  });

  const within = `${CLEANUP_RECOVERY_MS / 1000} s`;
  it(`during cleanup, its report lost: the machine leaves Cleanup within ${within} of the restart, because the controller asked the agent`, async () => {
    // The bound holds while no second status check could be due before the crash.
    expect(crashedAt - cleaningReleasedAt).toBeLessThan(REPORT_TIMEOUT_S * 1000 + statusCheckDelayMs(1));
    const back = await eventually(
      'the machine leaves Cleanup',
      async () => {
        const m = await machine(cleaning.machineId);
        return m.state !== 'Cleanup' ? m : undefined;
      },
      CLEANUP_RECOVERY_MS,
    );
    expect(Date.now() - crash.upAt()).toBeLessThan(CLEANUP_RECOVERY_MS);
    expect(back).toMatchObject({ state: 'Ready' });
    expect(back.instanceId).toBeUndefined();
    expect(await history(cleaning.machineId)).toContainEqual(
      expect.objectContaining({ action: 'cleanup-succeeded', message: expect.stringMatching(/report was lost/) }),
    );
    await instanceIn(cleaning.id, 'Terminated');
  });

  it('during a meta-instance replacement: the meta-instance is whole again, without the failed machine', async () => {
    const tenant = await as('acme', ['tenant']);
    const whole = await eventually(
      'the meta-instance is Ready with all members Ready',
      async () => {
        const { body } = await site().call('GET', `/v2/org/acme/nico/meta-instance/${metaId}`, { token: tenant });
        if (body.status !== 'Ready' || body.instanceIds.length !== META_NODES) return undefined;
        const members = await Promise.all(body.instanceIds.map(async (id: string) => (await site().call('GET', instancePath(id), { token: tenant })).body));
        return members.every((m) => m.status === 'Ready') ? members : undefined;
      },
      RECOVERY_MS,
    );
    expect(whole.map((m: { machineId: string }) => m.machineId)).not.toContain(failedMachine);
  });

  it('during a breaker reset with applyHeldBack: asking again finishes it, the breaker closed, every held-back machine with its repair request', async () => {
    const admin = await as('provider', ['provider-admin']);
    const reset = await site().call('POST', '/admin/safety/repair-storm/reset', { token: admin, body: { applyHeldBack: true } });
    expect(reset.status).toBe(200);
    expect(reset.body.repairStorm).toEqual({ state: 'closed', heldBack: [] });
    for (const id of heldBack) {
      const sources = (await machine(id)).healthOverrides.map((o: { source: string }) => o.source);
      expect(sources).toEqual(expect.arrayContaining(['repair-request', 'tenant-reported-issue']));
    }
  });

  it('the invariants hold once every workflow is done', async () => {
    await expectInvariants();
  });
});
