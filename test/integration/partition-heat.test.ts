import { randomUUID } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import { streamHeat, watchWriteTimes } from '#bench/partition-heat.ts';
import { registerMachine } from '#domain/machines/machines.ts';
import { createTables } from '#local/tables.ts';
import { dueTimes } from '#reconcilers/due-times.ts';
import { createDocumentClient } from '#store/client.ts';
import { DynamoFleetStore } from '#store/dynamo-store.ts';
import { T0 } from '#test/support/fixtures.ts';

// The heat meter reads a real table's stream: every write of the workload is there, priced per partition key and
// attributed to the second its client saw it answered.

describe('partition heat from the stream', () => {
  it('prices every change the table made, per partition key and second', async () => {
    const endpoint = inject('dynamoEndpoint');
    const table = `heat-${randomUUID().slice(0, 8)}`;
    await createTables(endpoint, { table, idempotencyTable: `${table}-idempotency` });
    const client = createDocumentClient(endpoint);
    const writeTimes = watchWriteTimes([client]);
    const store = new DynamoFleetStore(client, table, dueTimes);
    const machines = ['h-1', 'h-2', 'h-3'].map((id) => registerMachine(null, { id, machineType: 'heat-type', rack: 'r1' }, 'ops', T0)!.machines![0]!.after);
    const started = Date.now();
    await store.createMachines(machines);
    const { heat, records, unwatched } = await streamHeat(endpoint, table, { writeTimes });

    expect([records, unwatched]).toEqual([3, 0]);
    const total = (key: string) => [...(heat.get(key)?.values() ?? [])].reduce((sum, units) => sum + units, 0);
    expect(total('table:MACHINE#h-1')).toBe(1);
    expect(total('byKind:MACHINE#r1')).toBe(3);
    expect(total('allocatable:ALLOC#heat-type#r1')).toBe(3);
    const seconds = [...heat.get('byKind:MACHINE#r1')!.keys()];
    // At the second each write was answered: DynamoDB Local's own stamp is to the minute.
    expect(seconds.every((second) => second >= Math.floor(started / 1000) && second <= Date.now() / 1000)).toBe(true);
    // Up to a time: what was written after it is left out.
    expect((await streamHeat(endpoint, table, { until: new Date(started - 60_000) })).records).toBe(0);
  });
});
