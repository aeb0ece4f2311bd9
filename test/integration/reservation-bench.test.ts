import { describe, expect, inject, it } from 'vitest';
import { createDocumentClient } from '#store/client.ts';
import { dueTimes } from '#reconcilers/due-times.ts';
import { DynamoFleetStore } from '#store/dynamo-store.ts';
import { PartResults } from '../../bench/part.ts';
import { reservationPart } from '../../bench/parts/reservation.ts';
import { benchContext } from '../support/bench-context.ts';

// The reservation part at a small size: the request answers Pending at once, the reconciler's steps leave the
// reservation Active holding what it asked for, and the floor rewrote as many machines of its own.

describe('bench reservation part at 300 machines', () => {
  it('records the reservation at once, fans it out to Active, and sets both beside the deadline and the floor', async () => {
    const context = benchContext();
    const result = await reservationPart.run(context, reservationPart.options({ BENCH_RESERVATION_MACHINES: '300', BENCH_RESERVATION_RESERVED: '120' }));
    expect(result).toMatchObject({ machines: 300, reserved: 120, answered: 'Pending', deadline_ms: 10_000 });
    expect(result.reconciler_runs).toBeGreaterThan(0);
    expect(result.request_over_deadline).toBeCloseTo(result.request_ms / result.deadline_ms, 2);
    expect(result.fan_out_over_floor).toBeCloseTo(result.fan_out_ms / result.floor_ms, 2);
    expect(reservationPart.summarize(result, new PartResults())).toMatchObject({ reserved: 120, fan_out_over_floor: result.fan_out_over_floor });

    const store = new DynamoFleetStore(createDocumentClient(inject('dynamoEndpoint')), `bench-reservation-${context.id}`, dueTimes);
    const held = (await store.listReservations('acme', { limit: 10 })).items;
    expect(held).toHaveLength(1);
    expect(held[0]).toMatchObject({ state: 'Active' });
    const machines = await store.getMachines(held[0]!.machineIds);
    expect([...machines.values()].every((m) => m.reservation?.id === held[0]!.id)).toBe(true);
    expect(await store.allocatableMachineIds('gb200', 500, undefined, 'acme')).toHaveLength(120);
  }, 120_000);
});
