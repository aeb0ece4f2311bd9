import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventOfRecord } from '#handlers/stream.ts';
import { startTestSite, testConfig, type TestSite } from '#test/support/local-site.ts';

// The outbox's fallback on a whole site: the stream drops the record of one machine's event (as it does a record
// older than maxRecordAge), and the sweep delivers that event once the grace has passed, once, by its id. An event
// the stream delivered is never delivered again by the sweep.

const GRACE_SECONDS = 3;
const config = testConfig(`
[instance_create_retry]
base_delay_ms = 10
timeout_ms = 2000
[sweep]
outbox_grace_seconds = ${GRACE_SECONDS}
[simulator]
machines = [ { type = "gb200", count = 2, racks = 1 } ]
heartbeat_interval_seconds = 0.2
provision_ms = 20
cleanup_ms = 20
`);

let site: TestSite;
let admin: string;
// The machine whose outbox records the stream drops.
let stranded: string | undefined;

beforeAll(async () => {
  site = await startTestSite({
    config,
    aroundStreamHandler: (handle) => (event) =>
      handle({ Records: event.Records.filter((record) => !stranded || eventOfRecord(record)?.entry.machineId !== stranded) }),
  });
  admin = await site.token('provider', ['provider-admin']);
  await site.eventually(async () => (await site.call('GET', '/admin/machines?limit=10', { token: admin })).body?.items?.length === 2);
});
afterAll(() => site?.stop());

const repairEvents = (machineId: string) =>
  site.events.delivered.filter((event) => event.type === 'RepairRequested' && event.detail.machineId === machineId).map((event) => event.detail.id);
const sentBySweep = (id: string) => site.logLines.filter((line) => line.includes('delivered by the sweep') && line.includes(id));

describe('an outbox event the stream never handled', () => {
  it('is delivered by the sweep once, by its id; an event the stream delivered is not delivered again', async () => {
    const [dropped, kept] = ((await site.call('GET', '/admin/machines?limit=10', { token: admin })).body.items as Array<{ id: string }>).map((m) => m.id);
    stranded = dropped!;
    for (const id of [dropped, kept]) {
      const response = await site.call('POST', `/admin/machines/${id}/health-overrides`, { token: admin, body: { template: 'request-repair' } });
      expect(response.status, JSON.stringify(response.body)).toBeLessThan(300);
    }
    const [keptId] = await site.eventually(async () => repairEvents(kept!).length > 0 && repairEvents(kept!));
    expect(repairEvents(dropped!)).toEqual([]);

    const [droppedId] = await site.eventually(async () => repairEvents(dropped!).length > 0 && repairEvents(dropped!), 20_000);
    // Past the grace of both events (committed moments apart), and two more sweeps: nothing goes out again.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await site.afterNextSweep();
    await site.afterNextSweep();

    expect(repairEvents(dropped!)).toEqual([droppedId]);
    expect(sentBySweep(droppedId!)).toHaveLength(1);
    expect(sentBySweep(keptId!)).toEqual([]);
    const history = (await site.call('GET', `/admin/machines/${dropped}/history?limit=100`, { token: admin })).body.items as Array<Record<string, unknown>>;
    // Its repair event's delivery is recorded once (its commissioning's ValidationPassed went out before the drop).
    const repairDeliveries = history.filter((entry) => entry.action === 'event-delivered' && entry.message === 'RepairRequested');
    expect(repairDeliveries.map((entry) => entry.eventId)).toEqual([droppedId]);
  });
});
