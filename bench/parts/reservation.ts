import { envInt } from '../env.ts';
import { definePart, dynamoOf } from '../part.ts';
import { defaultReservationOptions, reservationBench } from '../reservation.ts';

export const reservationPart = definePart({
  name: 'reservation',
  describe: 'a reservation of 1,000 machines on a 10,000-machine site: the request against the deadline, the fan-out against plain writes',
  dynamodb: { serves: 'the reservation fleet' },
  section: 'reservation',
  options: (env) => ({
    machines: envInt(env, 'BENCH_RESERVATION_MACHINES', defaultReservationOptions.machines),
    reserved: envInt(env, 'BENCH_RESERVATION_RESERVED', defaultReservationOptions.reserved),
  }),
  run: (context, options) => reservationBench(dynamoOf(context).endpoint, context.id, options, context.progress),
  summaryKey: 'reservation',
  summarize: (r) => ({
    unit: 'ms; ratios: the request over the API deadline, the fan-out over as many plain machine writes (same run)',
    machines: r.machines,
    reserved: r.reserved,
    request_ms: r.request_ms,
    request_over_deadline: r.request_over_deadline,
    fan_out_ms: r.fan_out_ms,
    floor_ms: r.floor_ms,
    fan_out_over_floor: r.fan_out_over_floor,
  }),
});
