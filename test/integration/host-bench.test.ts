import { describe, expect, inject, it } from 'vitest';
import { catalogAfter, emptyCatalog } from '#domain/machines/catalog.ts';
import { demoFleet } from '#local/site-agent/demo-fleet.ts';
import { createDocumentClient } from '#store/client.ts';
import { dueTimes } from '#reconcilers/due-times.ts';
import { DynamoFleetStore } from '#store/dynamo-store.ts';
import { besideFloors } from '../../bench/host.ts';
import { PartResults } from '../../bench/part.ts';
import { hostPart } from '../../bench/parts/host.ts';
import { benchContext } from '../support/bench-context.ts';

// The host part at a small size: its floors are made of the requests they name, on the table it creates, and write
// what registration and the first roster write.

describe('bench host part at 120 machines', () => {
  it('reads, batch-writes and then conditionally rewrites every machine live, and sets the heartbeat figures beside its floors', async () => {
    const context = benchContext();
    const host = await hostPart.run(context, hostPart.options({ BENCH_HEARTBEAT_MACHINES: '120' }));
    const floors = host.dynamodb_local_floors;
    expect(host.machines).toBe(120);
    expect(host.node_loop.value).toBeGreaterThan(0);
    expect(floors.registration_floor_ms).toBeCloseTo(floors.batch_get_new_keys.ms + floors.batch_write.ms, 0);
    expect(floors.first_roster_floor_ms).toBe(floors.conditional_put.ms);
    const summary = hostPart.summarize(host, new PartResults());
    expect(summary).toMatchObject({ node_loop_ms: host.node_loop.value, registration_floor_ms: floors.registration_floor_ms });

    // Every machine went through both writes: the batch wrote version 0, the conditional put version 1, live and
    // in the allocatable index, as the first roster's walk leaves it.
    const store = new DynamoFleetStore(createDocumentClient(inject('dynamoEndpoint')), `host-${context.id}`, dueTimes);
    const fleet = demoFleet([{ type: 'gb200', count: 120, racks: 15 }]);
    const listed = [...(await store.getMachines(fleet.map((m) => m.id))).values()];
    expect(listed).toHaveLength(120);
    expect(listed.every((m) => m.heartbeatLive && m.version === 1 && m.lastHeartbeatAt !== undefined)).toBe(true);
    // The floors write machines only; the index is read through the racks a registration puts in the catalog.
    const catalog = catalogAfter(
      emptyCatalog(),
      listed.map((after) => ({ before: null, after })),
    )!;
    await store.commit({ catalog: { before: null, after: catalog }, history: [] });
    expect(await store.allocatableMachineIds('gb200', 200)).toHaveLength(120);

    const figure = (value: number) => ({ unit: 'ms', value, goal: 10, ratio: value / 10, meets_goal: false });
    const goals = { registration_ms: figure(floors.registration_floor_ms * 2), first_roster_to_allocatable_ms: figure(floors.first_roster_floor_ms * 3) };
    const beside = besideFloors(goals, host);
    expect(beside.registration_ms).toMatchObject({ dynamodb_local_floor_ms: floors.registration_floor_ms, ratio_to_floor: 2 });
    expect(beside.first_roster_to_allocatable_ms).toMatchObject({ dynamodb_local_floor_ms: floors.first_roster_floor_ms, ratio_to_floor: 3 });
  }, 120_000);
});
