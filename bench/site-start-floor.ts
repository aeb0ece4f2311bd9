import { DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { livenessChange } from '#domain/machines/heartbeat.ts';
import { registerMachine } from '#domain/machines/machines.ts';
import { startDynamoDbLocal } from '#local/dynamodb-local.ts';
import { demoFleet } from '#local/site-agent/demo-fleet.ts';
import { createTables } from '#local/tables.ts';
import { dueTimes } from '#reconcilers/due-times.ts';
import { SEPARATE_IN_FLIGHT } from '#reconcilers/runner.ts';
import { createDocumentClient } from '#store/client.ts';
import { inParallel } from '#store/in-parallel.ts';
import { isUsageWrite } from '#store/aggregates/quota-usage-items.ts';
import { writesOf } from '#store/writes.ts';
import { round } from './stats.ts';

// The floor of a whole site's start: from the moment its API answers until every machine is allocatable, the least
// any implementation must do is write each machine as allocatable, once, without overwriting one that exists. Here:
// one conditional PutItem per machine (`attribute_not_exists`), each item as the first roster leaves it (registered,
// then live, written by the store's own item functions), as many in flight as the runner sends separate writes.

/** ms to put every machine of `groups` allocatable, on a table of its own on `endpoint` (deleted after). */
export async function siteStartFloorMs(endpoint: string, id: string, groups: Array<{ type: string; count: number; racks: number }>): Promise<number> {
  const names = { table: `site-start-floor-${id}`, idempotencyTable: `site-start-floor-${id}-idempotency` };
  await createTables(endpoint, names);
  const now = new Date();
  const items = demoFleet(groups).map((m) => {
    const registered = registerMachine(null, { id: m.id, machineType: m.machineType, rack: m.rack }, 'bench', now)!.machines![0]!.after;
    const live = livenessChange(registered, true, undefined, now)!;
    const [write] = writesOf({ machines: [{ before: null, after: live }], history: [] }, () => '', dueTimes);
    if (!write || isUsageWrite(write)) throw new Error('a machine write is one put');
    return write.put;
  });
  const client = createDocumentClient(endpoint);
  const started = performance.now();
  await inParallel(items, SEPARATE_IN_FLIGHT, async (Item) => {
    await client.send(new PutCommand({ TableName: names.table, Item, ConditionExpression: 'attribute_not_exists(pk)' }));
  });
  const ms = round(performance.now() - started, 1);
  // Its items must not slow the site down that follows on the same DynamoDB Local.
  const dynamo = new DynamoDBClient({ endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  for (const table of [names.table, names.idempotencyTable]) await dynamo.send(new DeleteTableCommand({ TableName: table }));
  dynamo.destroy();
  client.destroy();
  return ms;
}

/**
 * The same on a DynamoDB Local of its own, stopped after, for a site measured next on a fresh one. On the site's
 * DynamoDB Local, the floor's table, though deleted, slowed the site's own start at 10,000 machines from 27 s to 73 s
 * (a deleted table's stream records stay in DynamoDB Local's log, and each write to a later table walks them:
 * docs/design.md, Known pitfalls).
 */
export async function siteStartFloorOnItsOwnMs(id: string, groups: Array<{ type: string; count: number; racks: number }>): Promise<number> {
  const local = await startDynamoDbLocal();
  try {
    return await siteStartFloorMs(local.endpoint, id, groups);
  } finally {
    await local.stop();
  }
}
