import prices from './prices.json' with { type: 'json' };

/**
 * A site's monthly AWS bill, from what the bench measured in the same run (DynamoDB capacity units per workflow,
 * the idle fleet's heartbeat writes, the sweep's reads) and the on-demand prices in bench/prices.json. What the
 * bench cannot measure (how often tenants rent and return machines, how long a Lambda invocation bills) is an
 * assumption, named below and printed with the estimate.
 */

export type Prices = typeof prices;

/** What the bench measured, per operation. */
export interface MeasuredUnits {
  createToReady: { readUnits: number; writeUnits: number };
  releaseToClean: { readUnits: number; writeUnits: number };
  memberReplacement: { readUnits: number; writeUnits: number };
  /** DynamoDB writes per second of an idle fleet (heartbeat refreshes); each a small item, one write unit. */
  idleWritesPerSecond: number;
  /** Read units of one sweep run over a quiet table. */
  sweepReadUnits: number;
}

export const ASSUMPTIONS = {
  /** Each machine rented and returned this often a month (a day-long rental). */
  rentalsPerMachinePerMonth: 30,
  /** Meta-instance members replaced (repair, failure) per machine a month. */
  replacementsPerMachinePerMonth: 0.05,
  /** API calls a rental makes besides create and release (status polls, listings). */
  extraApiCallsPerRental: 10,
  heartbeatIntervalSeconds: 5,
  sweepIntervalSeconds: 60,
  /** Billed duration and memory of an invocation, by function. */
  apiInvocation: { ms: 60, memoryGb: 1 },
  streamInvocation: { ms: 150, memoryGb: 0.5 },
  sweepInvocation: { ms: 400, memoryGb: 0.5 },
  /** Stream invocations per workflow: a batch per change the workflow makes, about. */
  streamInvocationsPerRental: 8,
  logBytesPerInvocation: 1_000,
  /** Events on the bus per replacement (a repair's requested, completed). */
  eventsPerReplacement: 2,
  /** Table size per machine, its history included. */
  storageBytesPerMachine: 20_000,
  alarms: 12,
} as const;

const SECONDS_PER_MONTH = 30 * 24 * 3600;
const perMillion = (count: number, price: number) => (count / 1e6) * price;
const cents = (usd: number) => Math.round(usd * 100) / 100;

export function monthlyCost(machines: number, measured: MeasuredUnits, price: Prices = prices) {
  const a = ASSUMPTIONS;
  const rentals = machines * a.rentalsPerMachinePerMonth;
  const replacements = machines * a.replacementsPerMachinePerMonth;
  const heartbeats = SECONDS_PER_MONTH / a.heartbeatIntervalSeconds;
  const sweeps = SECONDS_PER_MONTH / a.sweepIntervalSeconds;

  const writeUnits =
    rentals * (measured.createToReady.writeUnits + measured.releaseToClean.writeUnits) +
    replacements * measured.memberReplacement.writeUnits +
    measured.idleWritesPerSecond * SECONDS_PER_MONTH;
  const readUnits =
    rentals * (measured.createToReady.readUnits + measured.releaseToClean.readUnits) +
    replacements * measured.memberReplacement.readUnits +
    sweeps * measured.sweepReadUnits;
  const storageGb = (machines * a.storageBytesPerMachine) / 1e9;

  const apiRequests = heartbeats + rentals * (2 + a.extraApiCallsPerRental);
  const streamInvocations = rentals * a.streamInvocationsPerRental + replacements * a.streamInvocationsPerRental;
  const gbSeconds =
    (apiRequests * a.apiInvocation.ms * a.apiInvocation.memoryGb +
      streamInvocations * a.streamInvocation.ms * a.streamInvocation.memoryGb +
      sweeps * a.sweepInvocation.ms * a.sweepInvocation.memoryGb) /
    1000;
  const invocations = apiRequests + streamInvocations + sweeps;

  const parts = {
    dynamodb: {
      write_units: Math.round(writeUnits),
      read_units: Math.round(readUnits),
      usd: cents(
        perMillion(writeUnits, price.dynamodb_write_request_unit_per_million) +
          perMillion(readUnits, price.dynamodb_read_request_unit_per_million) +
          storageGb * (price.dynamodb_storage_gb_month + price.dynamodb_pitr_gb_month),
      ),
    },
    lambda: {
      invocations: Math.round(invocations),
      gb_seconds: Math.round(gbSeconds),
      usd: cents(perMillion(invocations, price.lambda_request_per_million) + gbSeconds * price.lambda_arm64_gb_second),
    },
    http_api: { requests: Math.round(apiRequests), usd: cents(perMillion(apiRequests, price.http_api_request_per_million)) },
    events_and_schedule: {
      usd: cents(
        perMillion(replacements * a.eventsPerReplacement, price.eventbridge_custom_event_per_million) +
          perMillion(sweeps, price.eventbridge_scheduler_invocation_per_million),
      ),
    },
    observability: {
      usd: cents(
        ((invocations * a.logBytesPerInvocation) / 1e9) * price.cloudwatch_logs_ingested_gb +
          perMillion(invocations, price.xray_trace_recorded_per_million) +
          a.alarms * price.cloudwatch_alarm_month,
      ),
    },
  };
  const total = Object.values(parts).reduce((sum, part) => sum + part.usd, 0);
  return { machines, ...parts, total_usd: cents(total) };
}

/** The estimate at the fleet sizes docs/deploy.md quotes, with what it rests on. */
export function costEstimate(measured: MeasuredUnits) {
  return {
    unit: `USD per month, on-demand, ${prices.region}, prices of ${prices.as_of} (bench/prices.json)`,
    at_1000_machines: monthlyCost(1_000, measured),
    at_10000_machines: monthlyCost(10_000, measured),
    measured,
    assumptions: ASSUMPTIONS,
  };
}
