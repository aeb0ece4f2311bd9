import type { DynamoDBRecord } from 'aws-lambda';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { isSatisfied } from '#domain/meta-instances/placement.ts';
import type { Instance, Machine, MetaInstance } from '#domain/core/model.ts';
import { createStreamHandler } from '#handlers/stream.ts';
import { sweep } from '#reconcilers/sweep.ts';
import { testConfig, type TestSite } from '#test/support/local-site.ts';
import { readySite, type Actors } from '#test/support/repair-steps.ts';

// Races, provoked: concurrent creates and deletes of meta-instances, machines failing and recovering (overrides
// and stopped heartbeats), duplicated and reordered stream records, overlapping sweeps. Then quiesce and check the
// invariants. Bounded by STRESS_MS (about half a minute) so the suite stays fast on two cores.
const STRESS_MS = Number(process.env.FLEETWARD_STRESS_MS ?? 25_000);

const config = `
[instance_create_retry]
base_delay_ms = 5
[heartbeat]
timeout_seconds = 1
[meta_instance]
max_consecutive_failures = 2
backoff_base_seconds = 0.2
backoff_max_seconds = 1
[simulator]
machines = [ { type = "gb200", count = 12, racks = 3 } ]
heartbeat_interval_seconds = 0.1
provision_ms = 5
cleanup_ms = 5
`;

let site: TestSite;
let who: Actors;
beforeAll(async () => {
  ({ site, who } = await readySite(12, { config: testConfig(config), sweepIntervalMs: 300 }));
});
afterAll(async () => site?.stop());

const pick = <T>(items: T[]): T => items[Math.floor(Math.random() * items.length)]!;
const machineIds = () => Array.from({ length: 12 }, (_, i) => `gb200-r${Math.floor(i / 4) + 1}-0${(i % 4) + 1}`);

async function all<T>(page: (nextToken?: string) => Promise<{ items: T[]; nextToken?: string | undefined }>): Promise<T[]> {
  const items: T[] = [];
  let token: string | undefined;
  do {
    const result = await page(token);
    items.push(...result.items);
    token = result.nextToken;
  } while (token);
  return items;
}

/** A Lambda-shaped stream record naming an item: reconcilers re-read state, so keys are all a duplicate needs. */
const record = (pk: string, sk: string): DynamoDBRecord => ({
  eventID: `${pk}-${Math.random()}`,
  eventName: 'MODIFY',
  eventSource: 'aws:dynamodb',
  eventSourceARN: 'arn:aws:dynamodb:local:000000000000:table/stress/stream/x',
  dynamodb: { Keys: { pk: { S: pk }, sk: { S: sk } }, SequenceNumber: String(Math.floor(Math.random() * 1e12)).padStart(21, '0') },
});

it('keeps every invariant through concurrent creates, deletes, failures, duplicated records and overlapping sweeps', {
  timeout: STRESS_MS + 90_000,
}, async () => {
  const counts = { creates: 0, deletes: 0, quarantines: 0, recoveries: 0, heartbeatStops: 0, duplicatedBatches: 0, sweeps: 0, errors: 0 };
  const metaIds: string[] = [];
  const deleted = new Set<string>();
  const stream = createStreamHandler(site.ctx);
  const deadline = Date.now() + STRESS_MS;
  const call = (method: string, path: string, token: string, body?: unknown) =>
    site.call(method, path, { token, ...(body ? { body } : {}) }).then((r) => {
      if (r.status >= 500) counts.errors += 1;
      return r;
    });

  const actorsLoop = async (act: () => Promise<unknown>, pauseMs: number) => {
    while (Date.now() < deadline) {
      await act().catch(() => {
        counts.errors += 1;
      });
      await new Promise((r) => setTimeout(r, pauseMs * (0.5 + Math.random())));
    }
  };

  await Promise.all([
    actorsLoop(async () => {
      counts.creates += 1;
      const answer = await call('POST', '/v2/org/acme/nico/meta-instance', who.tenant, {
        machineType: 'gb200',
        minNodes: 1 + Math.floor(Math.random() * 3),
        placement: { sameRack: Math.random() < 0.5 },
      });
      if (answer.status === 201) metaIds.push(answer.body.id);
    }, 150),
    actorsLoop(async () => {
      const live = metaIds.filter((id) => !deleted.has(id));
      if (live.length < 3) return;
      const id = pick(live);
      counts.deletes += 1;
      if ((await call('DELETE', `/v2/org/acme/nico/meta-instance/${id}`, who.tenant)).status === 202) deleted.add(id);
    }, 250),
    actorsLoop(async () => {
      const id = pick(machineIds());
      if (Math.random() < 0.5) {
        counts.quarantines += 1;
        await call('POST', `/admin/machines/${id}/health-overrides`, who.admin, { template: 'degraded' });
      } else {
        counts.recoveries += 1;
        await call('DELETE', `/admin/machines/${id}/health-overrides/degraded`, who.admin);
      }
    }, 200),
    actorsLoop(async () => {
      counts.heartbeatStops += 1;
      const id = pick(machineIds());
      await site.call('POST', `/_sim/machines/${id}/heartbeat`, { body: { stopped: true } });
      await new Promise((r) => setTimeout(r, 1500));
      await site.call('POST', `/_sim/machines/${id}/heartbeat`, { body: { stopped: false } });
    }, 700),
    actorsLoop(async () => {
      // Duplicated and reordered records for whatever exists now, delivered concurrently.
      const records = [...metaIds.map((id) => record(`META#${id}`, '#META')), ...machineIds().map((id) => record(`MACHINE#${id}`, '#MACHINE'))].sort(
        () => Math.random() - 0.5,
      );
      const batch = [...records, ...records.slice(0, Math.ceil(records.length / 2))].sort(() => Math.random() - 0.5);
      counts.duplicatedBatches += 2;
      await Promise.all([stream({ Records: batch }), stream({ Records: [...batch].reverse() })]);
    }, 400),
    actorsLoop(async () => {
      counts.sweeps += 2;
      await Promise.all([sweep(site.ctx), sweep(site.ctx)]);
    }, 300),
  ]);

  // Quiesce: every machine recovers, then let the loops settle.
  for (const id of machineIds()) {
    await site.call('POST', `/_sim/machines/${id}/heartbeat`, { body: { stopped: false } });
    await site.call('DELETE', `/admin/machines/${id}/health-overrides/degraded`, { token: who.admin });
  }

  const anomalies = async () => {
    const store = site.ctx.store;
    const machines: Machine[] = await all((t) => store.listMachines({ limit: 100, nextToken: t }));
    const instances: Instance[] = await all((t) => store.listInstances('acme', { limit: 200, nextToken: t }));
    const metas: MetaInstance[] = (await Promise.all(metaIds.map((id) => store.getMetaInstance(id)))).filter((m): m is MetaInstance => m !== null);
    const found: string[] = [];
    const live = instances.filter((i) => ['Provisioning', 'Ready', 'Repairing'].includes(i.status));
    const byMachine = new Map<string, string[]>();
    for (const i of live) byMachine.set(i.machineId, [...(byMachine.get(i.machineId) ?? []), i.id]);
    for (const [machineId, ids] of byMachine) if (ids.length > 1) found.push(`machine ${machineId} holds ${ids.join(', ')}`);
    for (const i of live) {
      const m = machines.find((x) => x.id === i.machineId);
      if (m?.instanceId !== i.id) found.push(`instance ${i.id} is live but machine ${i.machineId} holds ${m?.instanceId ?? 'nothing'}`);
      const meta = metas.find((x) => x.id === i.metaInstanceId);
      if (i.metaInstanceId && (!meta || meta.status === 'Deleted' || meta.status === 'Deleting'))
        found.push(`instance ${i.id} bound to deleted ${i.metaInstanceId}`);
    }
    for (const meta of metas.filter((m) => m.status !== 'Deleted' && m.status !== 'Deleting')) {
      const members = live
        .filter((i) => i.metaInstanceId === meta.id)
        .map((instance) => ({ instance, machine: machines.find((m) => m.id === instance.machineId) ?? null }));
      if (!isSatisfied(meta, members) && !meta.placementError) found.push(`meta-instance ${meta.id} is neither satisfied nor carries a placementError`);
    }
    for (const meta of metas.filter((m) => m.status === 'Deleting')) found.push(`meta-instance ${meta.id} still Deleting`);
    return found;
  };

  let found: string[] = [];
  const settleBy = Date.now() + 45_000;
  do {
    await new Promise((r) => setTimeout(r, 500));
    await sweep(site.ctx);
    found = await anomalies();
  } while (found.length > 0 && Date.now() < settleBy);

  const operations = Object.values(counts).reduce((a, b) => a + b, 0);
  console.log(
    `meta-instance stress: ${operations} operations ${JSON.stringify(counts)}; ${metaIds.length} ` +
      `meta-instances, ${deleted.size} deleted; anomalies at quiesce: ${found.length}`,
  );
  expect(found).toEqual([]);
  expect(counts.errors).toBe(0);
  // The run really raced: meta-instances came and went while machines failed (the counts scale with load).
  expect(counts.creates).toBeGreaterThanOrEqual(5);
  expect(counts.deletes).toBeGreaterThanOrEqual(2);
});
