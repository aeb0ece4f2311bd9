import { describe, expect, it } from 'vitest';
import { ASSUMPTIONS, monthlyCost, type MeasuredUnits } from '#bench/cost-model.ts';
import prices from '../../bench/prices.json' with { type: 'json' };

const nothing = { readUnits: 0, writeUnits: 0 };
const idle: MeasuredUnits = { createToReady: nothing, releaseToClean: nothing, memberReplacement: nothing, idleWritesPerSecond: 0, sweepReadUnits: 0 };
const month = 30 * 24 * 3600;

describe('the monthly cost estimate', () => {
  it("prices DynamoDB write units by what was measured: the idle fleet's writes every second of the month", () => {
    const cost = monthlyCost(0, { ...idle, idleWritesPerSecond: 0.1 });
    expect(cost.dynamodb.write_units).toBe(month * 0.1);
    expect(cost.dynamodb.usd).toBeCloseTo(((month * 0.1) / 1e6) * prices.dynamodb_write_request_unit_per_million, 2);
  });

  it('grows with the fleet through its rentals: each rents and returns a machine at the measured units', () => {
    const measured = { ...idle, createToReady: { readUnits: 10, writeUnits: 20 }, releaseToClean: { readUnits: 5, writeUnits: 27 } };
    const small = monthlyCost(1_000, measured);
    const large = monthlyCost(10_000, measured);
    const rentals = 1_000 * ASSUMPTIONS.rentalsPerMachinePerMonth;
    expect(small.dynamodb.write_units).toBe(rentals * 47);
    expect(small.dynamodb.read_units).toBe(rentals * 15 + (month / ASSUMPTIONS.sweepIntervalSeconds) * 0);
    expect(large.dynamodb.write_units).toBe(10 * small.dynamodb.write_units);
    expect(large.total_usd).toBeGreaterThan(small.total_usd);
  });

  it("charges one HTTP API request per heartbeat, whatever the fleet's size", () => {
    expect(monthlyCost(0, idle).http_api.requests).toBe(month / ASSUMPTIONS.heartbeatIntervalSeconds);
    expect(monthlyCost(0, idle).total_usd).toBeGreaterThan(0);
  });
});
