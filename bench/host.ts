// `host` part: what this host gives the timed goals, measured in the same run, with no Fleetward code in the way.
// Registration and the first roster are made of DynamoDB Local's writes, and DynamoDB Local (one JVM, one SQLite
// database) handles a request at a time: on a slower host it alone can take longer than a goal allows. So this part
// does, on a DynamoDB Local and a table of their own, the least each of those two operations can do by its contract:
//   registration: it must not overwrite a machine already registered, so it reads every machine's key (BatchGetItem,
//     none found) and writes every new machine (BatchWriteItem), each item as the store writes it;
//   first roster: every machine's liveness flips, each flip its own write guarded by the machine's version
//     (conditional PutItem), the item as the domain's livenessChange and the store's writesOf make it.
// The first roster's floor does not read the machines it rewrites (it wrote them): that read is the walk's cost, not
// the contract's. Their times are the floors the heartbeat part's figures are set beside (parts/heartbeat.ts).
// Node's speed on a fixed loop of arithmetic says how this host's CPU compares with another's.

import { BatchGetCommand, BatchWriteCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { dueTimes } from '#reconcilers/due-times.ts';
import { livenessChange } from '#domain/machines/heartbeat.ts';
import { registerMachine } from '#domain/machines/machines.ts';
import { createTables } from '#local/tables.ts';
import { demoFleet } from '#local/site-agent/demo-fleet.ts';
import { SEPARATE_IN_FLIGHT } from '#reconcilers/runner.ts';
import { createDocumentClient } from '#store/client.ts';
import { BATCH_GET_LIMIT, BATCH_WRITE_LIMIT, BATCH_WRITES_IN_FLIGHT } from '#store/dynamo-items.ts';
import { chunksOf, inParallel } from '#store/in-parallel.ts';
import { isUsageWrite } from '#store/aggregates/quota-usage-items.ts';
import { writesOf } from '#store/writes.ts';
import { keys } from '#store/keys.ts';
import { machineItem } from '#store/aggregates/machine-items.ts';
import { watchJitCompilers } from './jvm-compiler.ts';
import { ratio, round } from './stats.ts';

export interface HostOptions {
  /** Machines the floors are measured for: the heartbeat part's fleet size. */
  machines: number;
}

const LOOP_RUNS = 3;

/** A step's wall time, and what DynamoDB Local's JIT compilers used meanwhile. */
async function timedStep(javaPid: number | undefined, run: () => Promise<void>) {
  const compiling = watchJitCompilers(javaPid);
  const started = performance.now();
  await run();
  return { ms: round(performance.now() - started, 1), jit: compiling() };
}

/** ms for 10^8 additions in a loop V8 optimises: CPU speed alone, no memory or I/O. The median of a few runs. */
export function nodeLoopMs(): number {
  const runs: number[] = [];
  for (let run = 0; run < LOOP_RUNS; run++) {
    const started = performance.now();
    let sum = 0;
    for (let i = 0; i < 1e8; i++) sum += i;
    if (sum !== 4999999950000000) throw new Error(`loop summed to ${sum}`);
    runs.push(performance.now() - started);
  }
  return round(runs.sort((a, b) => a - b)[Math.floor(LOOP_RUNS / 2)]!, 1);
}

/** The floors, timed on `table` (fresh, on a fresh DynamoDB Local, as the heartbeat part's own is when it registers). */
export async function dynamoDbLocalFloors(client: DynamoDBDocumentClient, table: string, machines: number, javaPid?: number) {
  const now = new Date();
  const fleet = demoFleet([{ type: 'gb200', count: machines, racks: Math.ceil(machines / 8) }]);
  const registered = fleet.map((m) => registerMachine(null, { id: m.id, machineType: m.machineType, rack: m.rack }, 'bench', now)!.machines![0]!.after);
  const items = registered.map((machine) => machineItem(machine, dueTimes.machine(machine)));
  // Each machine's first roster as the walk commits it: a change of one machine, one guarded put.
  const live = registered.map((machine) => {
    const flipped = livenessChange(machine, true, undefined, now)!;
    const [write] = writesOf({ machines: [{ before: machine, after: flipped }], history: [] }, () => '', dueTimes);
    if (!write || isUsageWrite(write)) throw new Error('a machine change writes the machine alone');
    return write;
  });
  let found = 0;
  const read = await timedStep(javaPid, () =>
    inParallel(chunksOf(items, BATCH_GET_LIMIT), Number.POSITIVE_INFINITY, async (chunk) => {
      const result = await client.send(
        new BatchGetCommand({ RequestItems: { [table]: { Keys: chunk.map((item) => keys.machine(String(item.id))), ConsistentRead: true } } }),
      );
      found += result.Responses?.[table]?.length ?? 0;
      if (result.UnprocessedKeys?.[table]) throw new Error('DynamoDB Local left keys unprocessed');
    }),
  );
  if (found !== 0) throw new Error(`the floor's table was not fresh: ${found} machines found`);
  const batchWrite = await timedStep(javaPid, () =>
    inParallel(chunksOf(items, BATCH_WRITE_LIMIT), BATCH_WRITES_IN_FLIGHT, async (chunk) => {
      const result = await client.send(new BatchWriteCommand({ RequestItems: { [table]: chunk.map((Item) => ({ PutRequest: { Item } })) } }));
      if (result.UnprocessedItems?.[table]) throw new Error('DynamoDB Local left items unprocessed');
    }),
  );
  const put = await timedStep(javaPid, () =>
    inParallel(live, SEPARATE_IN_FLIGHT, async (write) => {
      const guard = { ConditionExpression: 'version = :expected', ExpressionAttributeValues: { ':expected': write.expectedVersion } };
      await client.send(new PutCommand({ TableName: table, Item: write.put, ...guard }));
    }),
  );
  const perItemUs = (ms: number) => round((ms * 1000) / machines, 1);
  return {
    unit: `ms for ${machines} machines, with µs per machine`,
    batch_get_new_keys: {
      ms: read.ms,
      us_per_machine: perItemUs(read.ms),
      as_sent: `${BATCH_GET_LIMIT} keys per request, all in flight`,
      dynamodb_local_jit: read.jit,
    },
    batch_write: {
      ms: batchWrite.ms,
      us_per_machine: perItemUs(batchWrite.ms),
      as_sent: `${BATCH_WRITE_LIMIT} items per request, ${BATCH_WRITES_IN_FLIGHT} in flight`,
      dynamodb_local_jit: batchWrite.jit,
    },
    conditional_put: {
      ms: put.ms,
      us_per_machine: perItemUs(put.ms),
      as_sent: `one item per request, ${SEPARATE_IN_FLIGHT} in flight`,
      dynamodb_local_jit: put.jit,
    },
    registration_floor_ms: round(read.ms + batchWrite.ms, 1),
    first_roster_floor_ms: put.ms,
  };
}

export async function hostBench(endpoint: string, id: string, options: HostOptions, progress: (line: string) => void, javaPid?: number) {
  const loopMs = nodeLoopMs();
  progress(`host: 10^8 additions in ${loopMs} ms; DynamoDB Local floors for ${options.machines} machines`);
  const names = { table: `host-${id}`, idempotencyTable: `host-${id}-idempotency` };
  await createTables(endpoint, names);
  const floors = await dynamoDbLocalFloors(createDocumentClient(endpoint), names.table, options.machines, javaPid);
  progress(`host: registration floor ${floors.registration_floor_ms} ms, first roster floor ${floors.first_roster_floor_ms} ms`);
  return {
    machines: options.machines,
    node_loop: { unit: 'ms for 10^8 additions (median of 3): CPU speed; lower is faster', value: loopMs },
    dynamodb_local_floors: floors,
    method:
      "a DynamoDB Local of its own, fresh as the heartbeat part's is, with the project's table; the heartbeat part's fleet shape; " +
      'the least registration and the first roster can do by their contract, sent as the store sends them, items as the store writes them',
  };
}

type Judged = { value: number };

/**
 * The heartbeat part's two figures made of DynamoDB Local's writes, each beside its floor on this host: what is left
 * of the ratio is Fleetward's own cost. Only when both parts ran for the same number of machines.
 */
export function besideFloors<G extends { registration_ms: Judged; first_roster_to_allocatable_ms: Judged }>(
  goals: G,
  host: Awaited<ReturnType<typeof hostBench>>,
) {
  const beside = (figure: Judged, floorMs: number) => ({ ...figure, dynamodb_local_floor_ms: floorMs, ratio_to_floor: ratio(figure.value, floorMs) });
  return {
    ...goals,
    registration_ms: beside(goals.registration_ms, host.dynamodb_local_floors.registration_floor_ms),
    first_roster_to_allocatable_ms: beside(goals.first_roster_to_allocatable_ms, host.dynamodb_local_floors.first_roster_floor_ms),
  };
}
