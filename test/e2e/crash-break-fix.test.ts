import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseSiteConfig } from '#config/site-config.ts';
import { surplusAllowed } from '#domain/meta-instances/member-replacement.ts';
import { powerRules } from '#runtime/context.ts';
import { createCallMs, sweepWithinMs } from '#test/support/bounds.ts';
import { crashableRunner } from '#test/support/crashable-runner.ts';

// Crash safety of the tenant's break-fix primitives (docs/api.md "Power", "Replacing a member"): the local runner is
// killed with SIGKILL, its whole process tree, while a power cycle's call is at the agent and while a member's successor
// is being created, then started again on the same FLEETWARD_DATA_DIR. Each must finish by itself: the cycle sent again
// once its lease lapsed and accepted, the successor Ready and only then the outgoing member released, never more live
// members than the one successor allows. Apart from crash-recovery.test.ts, so that neither's steps before the kill
// (every held call must still be held when it lands) lengthen the other's.

const SETTLE_MS = 2_000;
const CREATE_TIMEOUT_MS = 20_000;
const SWEEP_INTERVAL_S = 1;

const SITE = 'crash-break-fix';
const config = `
[site]
name = "${SITE}"
[instance_create_retry]
max_attempts = 1
timeout_ms = ${CREATE_TIMEOUT_MS}
[sweep]
interval_seconds = ${SWEEP_INTERVAL_S}
[simulator]
machines = [ { type = "gb200", count = 4, racks = 1 } ]
heartbeat_interval_seconds = 0.2
provision_ms = 500
cleanup_ms = 200
`;

const siteConfig = parseSiteConfig(config);
const SWEEP_INTERVAL_MS = SWEEP_INTERVAL_S * 1000;
/** A step the test set off: one stream reaction, or the next sweep should the reaction fail. */
const STEP_MS = sweepWithinMs(siteConfig, SWEEP_INTERVAL_MS);
/** After the restart: the lease of each held call lapses, a sweep finds it, the call goes again (a create, then the release). */
const RECOVERY_MS = Math.max(createCallMs(siteConfig), powerRules(siteConfig).callLeaseMs) + 2 * STEP_MS + createCallMs(siteConfig) + STEP_MS;
const RUNNER_UP_MS = 60_000;
const START_MS = RUNNER_UP_MS + STEP_MS;

const crash = crashableRunner({ config, siteName: SITE, runnerUpMs: RUNNER_UP_MS, defaultWaitMs: STEP_MS });
const { site, eventually, as } = crash;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const tenantCall = async (method: string, path: string, body?: unknown) => site().call(method, path, { token: await as('acme', ['tenant']), body });

async function instanceIn(id: string, status: string, withinMs = STEP_MS) {
  return eventually(
    `instance ${id} ${status}`,
    async () => {
      const { body } = await tenantCall('GET', `/v2/org/acme/nico/instance/${id}`);
      return body.status === status ? body : undefined;
    },
    withinMs,
  );
}

/** When an action was recorded in a machine's history about an instance. */
async function recordedAt(machineId: string, action: string, instanceId: string): Promise<string> {
  const admin = await as('provider', ['provider-admin']);
  const { body } = await site().call('GET', `/admin/machines/${machineId}/history?limit=200`, { token: admin });
  const entry = (body.items as Array<{ action: string; instanceId?: string; at: string }>).find((e) => e.action === action && e.instanceId === instanceId);
  expect(entry, `${action} of ${instanceId} on ${machineId}`).toBeDefined();
  return entry!.at;
}

async function agentRequests(): Promise<Array<{ kind: string; name?: string; instanceId?: string; action?: string; outcome?: unknown }>> {
  return (await site().call('GET', '/_sim/requests')).body.items;
}

beforeAll(async () => {
  await crash.start();
}, START_MS);

afterAll(() => crash.dispose());

describe('a crash while a power cycle and a member replacement are under way', { timeout: RECOVERY_MS + STEP_MS }, () => {
  let cycled: { id: string; siteName: string };
  let metaId: string;
  let outgoing: string;

  beforeAll(
    async () => {
      const single = await tenantCall('POST', '/v2/org/acme/nico/meta-instance', { machineType: 'gb200' });
      expect(single.status, JSON.stringify(single.body)).toBe(201);
      metaId = single.body.id;
      outgoing = (await instanceIn(single.body.instanceIds[0], 'Ready')).id;
      const created = await tenantCall('POST', '/v2/org/acme/nico/instance', { machineType: 'gb200' });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      cycled = await instanceIn(created.body.id, 'Ready');

      // The agent holds the successor's create and the power call open: both are in flight when the kill lands.
      expect((await site().call('POST', '/_sim/faults', { body: { op: 'create', outcomes: ['timeout'] } })).status).toBe(200);
      expect((await site().call('POST', '/_sim/faults', { body: { op: 'power', outcomes: ['timeout'] } })).status).toBe(200);
      const asked = await tenantCall('POST', `/v2/org/acme/nico/meta-instance/${metaId}/replace`, { instanceId: outgoing });
      expect(asked.status, JSON.stringify(asked.body)).toBe(202);
      const power = await tenantCall('POST', `/v2/org/acme/nico/instance/${cycled.id}/power`, { action: 'cycle' });
      expect(power.status, JSON.stringify(power.body)).toBe(202);
      await eventually("the successor's create and the cycle are at the agent", async () => {
        const requests = await agentRequests();
        const successorCreate = requests.some((r) => r.kind === 'create' && r.instanceId !== outgoing && r.instanceId !== cycled.id);
        return successorCreate && requests.some((r) => r.kind === 'power' && r.name === cycled.siteName);
      });
      await sleep(SETTLE_MS);
      const { metaInstances, instances } = await site().records();
      expect(metaInstances.find((m) => m.id === metaId)?.memberReplacements?.[0]?.successorId, 'a successor was placed before the kill').toBeDefined();
      expect(instances.find((i) => i.id === cycled.id)?.power?.phase, 'the cycle is in flight at the kill').toBe('in-flight');
      await crash.kill();
      await crash.start();
    },
    4 * STEP_MS + SETTLE_MS + 2 * START_MS,
  );

  it('the power cycle is sent again once its lease lapsed, and accepted', async () => {
    const done = await eventually(
      'the cycle is done',
      async () => {
        const { body } = await tenantCall('GET', `/v2/org/acme/nico/instance/${cycled.id}`);
        return body.power?.result === 'pending' ? undefined : body;
      },
      RECOVERY_MS,
    );
    expect(done.power).toMatchObject({ action: 'cycle', state: 'on', result: 'accepted' });
    expect((await agentRequests()).filter((r) => r.kind === 'power')).toEqual([expect.objectContaining({ name: cycled.siteName, outcome: 202 })]);
  });

  it('the successor comes up, then the outgoing member is released; never more live members than the successor allows', async () => {
    const replaced = await eventually(
      'the meta-instance holds one Ready member, not the outgoing one',
      async () => {
        const { body } = await tenantCall('GET', `/v2/org/acme/nico/meta-instance/${metaId}`);
        if (body.memberReplacements?.length || body.instanceIds.length !== 1 || body.instanceIds.includes(outgoing)) return undefined;
        const member = (await tenantCall('GET', `/v2/org/acme/nico/instance/${body.instanceIds[0]}`)).body;
        return member.status === 'Ready' ? member : undefined;
      },
      RECOVERY_MS,
    );
    const released = await instanceIn(outgoing, 'Terminated', RECOVERY_MS);
    expect(await recordedAt(replaced.machineId, 'instance-ready', replaced.id)).toBeDefined();
    expect((await recordedAt(replaced.machineId, 'instance-ready', replaced.id)) <= (await recordedAt(released.machineId, 'instance-released', outgoing))).toBe(
      true,
    );
    const { metaInstances, instances } = await site().records();
    const meta = metaInstances.find((m) => m.id === metaId)!;
    const live = instances.filter((i) => i.metaInstanceId === metaId && ['Provisioning', 'Ready', 'Repairing'].includes(i.status));
    expect(live.length).toBeLessThanOrEqual(meta.minNodes + surplusAllowed(meta));
    const holders = new Map<string, number>();
    for (const i of instances.filter((x) => ['Provisioning', 'Ready', 'Repairing', 'Terminating'].includes(x.status))) {
      holders.set(i.machineId, (holders.get(i.machineId) ?? 0) + 1);
    }
    expect(
      [...holders.values()].every((n) => n === 1),
      'no machine held twice',
    ).toBe(true);
  });
});
