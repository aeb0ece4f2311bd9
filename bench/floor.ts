import { randomUUID } from 'node:crypto';
import { CreateTableCommand, DeleteTableCommand, DynamoDBClient, waitUntilTableExists } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, QueryCommand, TransactWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { HistoryEntry, Instance, Machine } from '#domain/model.ts';
import { createDocumentClient } from '#store/client.ts';
import { fromInstanceItem, fromMachineItem, historyItem, instanceItem, keys, machineItem } from '#store/items.ts';
import { indexes, tableDefinition } from '#store/table.ts';
import { countRequests, units } from './counter.ts';
import { settle, type Cost } from './stats.ts';

/**
 * The floor: the DynamoDB requests the create and release paths make, sent straight through the SDK (same
 * document client settings, consistent reads, ReturnConsumedCapacity as the bench meter asks) against a scratch table
 * with the site's table definition, seeded with copies of the API site's own catalog, heartbeat and machine items so
 * every request reads and writes items of the same size.
 *
 * create:  GetItem catalog, GetItem site heartbeat, Query allocatable index, TransactWriteItems [conditional
 *          machine Put, instance Put, history Put]
 * release: GetItem instance, GetItem machine, TransactWriteItems [conditional instance Put, conditional machine
 *          Put, history Put]
 * Outside the timed parts the floor does what the site's reactions do between a tenant's calls: the instance
 * becomes Ready before it is released, and after the release the machine goes back to the pool.
 */
export interface FloorCycle {
  createMs: number;
  releaseMs: number;
  createCost: Cost;
  releaseCost: Cost;
}

export interface Floor {
  tableName: string;
  seeded: { machines: number };
  cycle(): Promise<FloorCycle>;
  stop(): Promise<void>;
}

async function copySiteItems(endpoint: string, from: string, to: DynamoDBDocumentClient, toTable: string, machineType: string): Promise<number> {
  const source = createDocumentClient(endpoint);
  for (const key of [keys.siteCatalog, keys.siteHeartbeat]) {
    const { Item } = await source.send(new GetCommand({ TableName: from, Key: key, ConsistentRead: true }));
    if (!Item) throw new Error(`bench floor: the site table has no ${key.pk}/${key.sk} item to copy`);
    await to.send(new PutCommand({ TableName: toTable, Item }));
  }
  let copied = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const page = await source.send(
      new QueryCommand({
        TableName: from,
        IndexName: indexes.allocatable.name,
        KeyConditionExpression: '#pk = :pk',
        ExpressionAttributeNames: { '#pk': indexes.allocatable.pk },
        ExpressionAttributeValues: { ':pk': `ALLOC#${machineType}` },
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    );
    // The index holds keys only: each machine is read from the table.
    for (const key of page.Items ?? []) {
      const { Item } = await source.send(new GetCommand({ TableName: from, Key: { pk: key.pk, sk: key.sk }, ConsistentRead: true }));
      if (!Item) continue;
      await to.send(new PutCommand({ TableName: toTable, Item }));
      copied++;
    }
    start = page.LastEvaluatedKey;
  } while (start);
  return copied;
}

export async function startFloor(endpoint: string, id: string, siteTable: string, machineType: string, org: string): Promise<Floor> {
  const tableName = `bench-floor-${id}`;
  const admin = new DynamoDBClient({ endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  await admin.send(new CreateTableCommand(tableDefinition(tableName)));
  await waitUntilTableExists({ client: admin, maxWaitTime: 30 }, { TableName: tableName });

  const doc = createDocumentClient(endpoint);
  const machines = await copySiteItems(endpoint, siteTable, doc, tableName, machineType);
  if (machines === 0) throw new Error('bench floor: no allocatable machines to copy from the site table');
  // Counted only after seeding, so the counts are the timed requests alone.
  const requests = countRequests(doc).counts;

  const cost = (writes: number, writeUnits: number, readUnits: number, before: Record<string, number>): Cost => {
    const delta: Record<string, number> = {};
    for (const [name, n] of Object.entries(requests)) if (n - (before[name] ?? 0) !== 0) delta[name] = n - (before[name] ?? 0);
    return { writes, writeUnits, readUnits, requests: delta };
  };

  const cycle = async (): Promise<FloorCycle> => {
    // ---- create ----
    let before = { ...requests };
    let reads = 0;
    await settle();
    const t0 = performance.now();
    const catalog = await doc.send(new GetCommand({ TableName: tableName, Key: keys.siteCatalog, ConsistentRead: true, ReturnConsumedCapacity: 'TOTAL' }));
    const heartbeat = await doc.send(new GetCommand({ TableName: tableName, Key: keys.siteHeartbeat, ConsistentRead: true, ReturnConsumedCapacity: 'TOTAL' }));
    const candidates = await doc.send(
      new QueryCommand({
        TableName: tableName,
        IndexName: indexes.allocatable.name,
        KeyConditionExpression: '#pk = :pk',
        ExpressionAttributeNames: { '#pk': indexes.allocatable.pk },
        ExpressionAttributeValues: { ':pk': `ALLOC#${machineType}` },
        Limit: 100,
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    const keysFound = candidates.Items ?? [];
    const pickedKey = keysFound[Math.floor(Math.random() * keysFound.length)];
    if (!pickedKey) throw new Error('bench floor: no allocatable machine');
    // The index holds keys only (store/table.ts): the picked machine is read from the table.
    const picked = await doc.send(new GetCommand({ TableName: tableName, Key: { pk: pickedKey.pk, sk: pickedKey.sk }, ReturnConsumedCapacity: 'TOTAL' }));
    reads += units(catalog.ConsumedCapacity) + units(heartbeat.ConsumedCapacity) + units(candidates.ConsumedCapacity) + units(picked.ConsumedCapacity);
    if (!picked.Item) throw new Error('bench floor: the picked machine is gone');
    const machine = fromMachineItem(picked.Item);
    const at = new Date().toISOString();
    const instanceId = `i-${randomUUID().replaceAll('-', '').slice(0, 16)}`;
    const instance: Instance = {
      id: instanceId,
      org,
      name: instanceId,
      machineId: machine.id,
      machineType: machine.machineType,
      status: 'Provisioning',
      labels: {},
      createAttempts: 0,
      siteName: instanceId,
      creation: { clientToken: `ct-${randomUUID().replaceAll('-', '').slice(0, 16)}`, phase: 'pending' },
      createdBy: 'bench-user',
      createdAt: at,
      updatedAt: at,
      version: 0,
    };
    const assigned: Machine = { ...machine, state: 'Assigned', instanceId, updatedAt: at, version: machine.version + 1 };
    const created: HistoryEntry = {
      machineId: machine.id,
      at,
      actor: 'bench-user',
      action: 'instance-created',
      instanceId,
      changes: { state: { from: machine.state, to: 'Assigned' }, instanceId: { to: instanceId } },
    };
    const createWrite = await doc.send(
      new TransactWriteCommand({
        TransactItems: [
          { Put: { TableName: tableName, Item: machineItem(assigned), ConditionExpression: 'version = :expected', ExpressionAttributeValues: { ':expected': machine.version } } },
          { Put: { TableName: tableName, Item: instanceItem(instance), ConditionExpression: 'attribute_not_exists(pk)' } },
          { Put: { TableName: tableName, Item: historyItem(created, randomUUID().slice(0, 8)), ConditionExpression: 'attribute_not_exists(pk)' } },
        ],
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    const createMs = performance.now() - t0;
    const createCost = cost(1, units(createWrite.ConsumedCapacity), reads, before);

    // ---- what the site's reaction does before a tenant releases (untimed): the create claimed, then Ready ----
    const readyAt = new Date().toISOString();
    const ready: Instance = {
      ...instance,
      status: 'Ready',
      createAttempts: 1,
      creation: { clientToken: instance.creation.clientToken, phase: 'done' },
      updatedAt: readyAt,
      version: instance.version + 2,
    };
    await doc.send(new PutCommand({ TableName: tableName, Item: instanceItem(ready) }));

    // ---- release ----
    before = { ...requests };
    await settle();
    const t1 = performance.now();
    const instanceRead = await doc.send(new GetCommand({ TableName: tableName, Key: keys.instance(instanceId), ConsistentRead: true, ReturnConsumedCapacity: 'TOTAL' }));
    const machineRead = await doc.send(new GetCommand({ TableName: tableName, Key: keys.machine(machine.id), ConsistentRead: true, ReturnConsumedCapacity: 'TOTAL' }));
    reads = units(instanceRead.ConsumedCapacity) + units(machineRead.ConsumedCapacity);
    if (!instanceRead.Item || !machineRead.Item) throw new Error('bench floor: the instance or machine just written is missing');
    const current = fromInstanceItem(instanceRead.Item);
    const held = fromMachineItem(machineRead.Item);
    const releasedAt = new Date().toISOString();
    const terminating: Instance = { ...current, status: 'Terminating', updatedAt: releasedAt, version: current.version + 1 };
    const cleaning: Machine = {
      ...held,
      state: 'Cleanup',
      cleanup: { instanceId, phase: 'pending', attempts: 0 },
      updatedAt: releasedAt,
      version: held.version + 1,
    };
    const released: HistoryEntry = {
      machineId: held.id,
      at: releasedAt,
      actor: 'bench-user',
      action: 'instance-released',
      instanceId,
      labels: current.labels,
      changes: { status: { from: current.status, to: 'Terminating' }, state: { from: held.state, to: 'Cleanup' } },
    };
    const releaseWrite = await doc.send(
      new TransactWriteCommand({
        TransactItems: [
          { Put: { TableName: tableName, Item: instanceItem(terminating), ConditionExpression: 'version = :expected', ExpressionAttributeValues: { ':expected': current.version } } },
          { Put: { TableName: tableName, Item: machineItem(cleaning), ConditionExpression: 'version = :expected', ExpressionAttributeValues: { ':expected': held.version } } },
          { Put: { TableName: tableName, Item: historyItem(released, randomUUID().slice(0, 8)), ConditionExpression: 'attribute_not_exists(pk)' } },
        ],
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    const releaseMs = performance.now() - t1;
    const releaseCost = cost(1, units(releaseWrite.ConsumedCapacity), reads, before);

    // ---- what the site's cleanup does (untimed): the machine back in the pool, the instance Terminated ----
    const doneAt = new Date().toISOString();
    const { instanceId: _gone, cleanup: _done, ...rest } = cleaning;
    await doc.send(new PutCommand({ TableName: tableName, Item: machineItem({ ...rest, state: 'Ready', updatedAt: doneAt, version: cleaning.version + 2 }) }));
    await doc.send(new PutCommand({ TableName: tableName, Item: instanceItem({ ...terminating, status: 'Terminated', updatedAt: doneAt, version: terminating.version + 1 }) }));
    return { createMs, releaseMs, createCost, releaseCost };
  };

  return {
    tableName,
    seeded: { machines },
    cycle,
    async stop() {
      await admin.send(new DeleteTableCommand({ TableName: tableName })).catch(() => {});
      admin.destroy();
    },
  };
}
