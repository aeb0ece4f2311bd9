import { afterAll, describe, expect, inject, it } from 'vitest';
import type { Machine } from '#domain/core/model.ts';
import { newReservation } from '#domain/reservations/reservations.ts';
import { dueTimes } from '#reconcilers/due-times.ts';
import { iso } from '#domain/core/time.ts';
import { DUE_PAGE } from '#reconcilers/sweep.ts';
import { SWEEP_FOLLOW_UP } from '#reconcilers/sweep-follow-up.ts';
import type { RecordedCall } from '#local/aws-call-recorder.ts';
import { readRecordedCalls } from '#test/support/iam/recorded-calls.ts';
import { DynamoFleetStore } from '#store/dynamo-store.ts';
import { aMachine } from '#test/support/fixtures.ts';
import { scanTable, startTestSite, testConfig, type TestSite } from '#test/support/local-site.ts';
import { freshTables } from '#test/support/tables.ts';

// The local runner records the AWS calls of each function it stands in for (local/aws-call-recorder.ts): the IAM
// test holds them against each function's role. Every site of the run records into the run's directory.

const sites: TestSite[] = [];
afterAll(async () => {
  for (const site of sites) await site.stop();
});

const recorded = () => readRecordedCalls(inject('awsCallLogDir'));
const has = (fn: string, action: string, resource: string) => recorded().some((c) => c.function === fn && c.action === action && c.resource === resource);

describe('the AWS call log', () => {
  it("names the function whose role makes each call: the route's group, the stream reader, the sweep", async () => {
    const site = await startTestSite();
    sites.push(site);
    const tenant = await site.token('acme', ['tenant']);
    const admin = await site.token('provider', ['provider-admin']);
    expect((await site.call('GET', '/v2/org/acme/nico/instance', { token: tenant })).status).toBe(200);
    expect((await site.call('GET', '/admin/machines', { token: admin })).status).toBe(200);
    await site.eventually(async () =>
      [
        has('TenantApi', 'dynamodb:Query', 'table/main/index/byOrg'),
        has('AdminApi', 'dynamodb:Query', 'table/main/index/byKind'),
        has('SiteAgentApi', 'dynamodb:UpdateItem', 'table/main'),
        has('StreamHandler', 'dynamodb:GetRecords', 'table/main/stream'),
        has('SweepHandler', 'dynamodb:Query', 'table/main/index/due'),
      ].every(Boolean),
    );
    // A test reading the tables is no function: its Scan is not the site's, whose only Scan is the sweep's, walking the
    // table for a data migration (store/migrations).
    await scanTable(site);
    expect(recorded().filter((c) => c.action === 'dynamodb:Scan' && c.function !== 'SweepHandler')).toEqual([]);
  });

  it('shows a sweep that ran out of time handing the rest to a follow-up through the event bus', async () => {
    // More than a page of due work, all there before the site's first sweep: it cannot finish it in its time.
    const { names, client } = await freshTables('e2e');
    const store = new DynamoFleetStore(client, names.table, dueTimes);
    const at = iso(new Date());
    const backlog: Machine[] = Array.from({ length: DUE_PAGE + 50 }, (_, i) =>
      aMachine({
        id: `backlog-${i}`,
        state: 'Cleanup',
        instanceId: `i-${i}`,
        cleanup: { instanceId: `i-${i}`, phase: 'pending', attempts: 0 },
        createdAt: at,
        updatedAt: at,
      }),
    );
    for (let start = 0; start < backlog.length; start += 50) {
      await store.commit({ machines: backlog.slice(start, start + 50).map((after) => ({ before: null, after })), history: [] });
    }
    client.destroy();
    // The sweep alone (no stream reactions), with less time per run than a page of due work takes.
    const site = await startTestSite({ tableNames: names, streamPoller: false, sweepIntervalMs: 20 });
    sites.push(site);
    const isFollowUp = (c: RecordedCall) =>
      c.function === 'SweepHandler' &&
      c.action === 'events:PutEvents' &&
      c.resource === 'event-bus/repair' &&
      JSON.stringify(c.context) === JSON.stringify({ 'events:source': [SWEEP_FOLLOW_UP.source], 'events:detail-type': [SWEEP_FOLLOW_UP.detailType] });
    await site.eventually(async () => recorded().some(isFollowUp), 20_000);
    // The follow-ups (and the schedule) get through the whole backlog.
    const backlogDue = async () => (await site.ctx.store.dueEntities(new Date(), { limit: 1_000 })).items.filter((ref) => ref.id.startsWith('backlog-'));
    await site.eventually(async () => (await backlogDue()).length === 0, 30_000);
  }, 60_000);

  it('shows the sweep reading NVLink domains for a reservation the stream never handled', async () => {
    // A fleet in two NVLink domains, counted by the fleet summary while the stream runs.
    const { names, client } = await freshTables('e2e');
    const config = testConfig(`
[simulator]
machines = [ { type = "gb200", count = 8, racks = 2, nvlink_domain_size = 4 } ]
heartbeat_interval_seconds = 0.2
`);
    const counted = await startTestSite({ tableNames: names, config });
    const admin = await counted.token('provider', ['provider-admin']);
    await counted.eventually(async () => (await counted.call('GET', '/admin/fleet/summary', { token: admin })).body.byType?.gb200?.machines === 8);
    await counted.stop();
    // A reservation of a whole domain recorded while no stream reacts (as after a crash): the sweep alone claims it.
    const store = new DynamoFleetStore(client, names.table, dueTimes);
    const ask = { org: 'acme', machineType: 'gb200', ask: { nvlinkDomains: ['gb200-nvl2'] }, wanted: 4 };
    await store.commit({ reservations: [{ before: null, after: newReservation('rsv-unhandled', ask, 'provider', new Date()) }], history: [] });
    const site = await startTestSite({ tableNames: names, config, streamPoller: false, registerFleet: false });
    sites.push(site);
    const active = await site.eventually(async () => {
      const reservation = await store.getReservation('rsv-unhandled');
      return reservation?.state === 'Active' ? reservation : undefined;
    }, 20_000);
    client.destroy();
    expect(active.machineIds).toHaveLength(4);
    expect(has('SweepHandler', 'dynamodb:Query', 'table/main/index/allocatableByDomain')).toBe(true);
  }, 90_000);
});
