import { randomUUID } from 'node:crypto';
import { CreateTableCommand, DeleteTableCommand, DynamoDBClient, waitUntilTableExists } from '@aws-sdk/client-dynamodb';
import { dueTimes } from '#reconcilers/due-times.ts';
import { GetCommand, PutCommand, QueryCommand, TransactWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Change } from '#domain/core/change.ts';
import { finishCleanup } from '#domain/instances/cleanup.ts';
import { assignInstance, claimCreate, completeCreate, releaseInstance } from '#domain/instances/instances.ts';
import { inAllocatableIndex } from '#domain/core/health.ts';
import type { Instance, Machine } from '#domain/core/model.ts';
import { randomIds } from '#handlers/lambda-context.ts';
import { createDocumentClient } from '#store/client.ts';
import { transactItemOf } from '#store/dynamo-items.ts';
import { DynamoFleetStore } from '#store/dynamo-store.ts';
import { writesOf } from '#store/writes.ts';
import { allocatablePartition, machineIdOfKey, machineItem } from '#store/aggregates/machine-items.ts';
import { fromInstanceItem } from '#store/aggregates/instance-items.ts';
import { keys } from '#store/keys.ts';
import { indexes, tableDefinition } from '#store/table.ts';
import { countRequests, snapshot } from './counter.ts';
import { settle, subtractCost, type Cost } from './stats.ts';

// The contract floor of create and release: the least DynamoDB work each operation can do by what it promises,
// sent straight through the SDK (the store's client settings) on a scratch table of the site's definition, seeded
// with copies of the API site's catalog, heartbeat and machine items.
//
// create:  one Query of the allocatable index (a free machine of the type; the index holds keys only), then one
//          TransactWriteItems claiming it: the machine Assigned (guarded by its version), the instance (new) and the
//          history entry (new).
// release: one strongly consistent GetItem of the instance (whose it is, and on which machine), then one
//          TransactWriteItems: the instance Terminating and the machine to Cleanup (each guarded by its version),
//          and the history entry (new).
//
// The items are what the service would write: the domain's own decisions (assignInstance, releaseInstance) turned
// into writes by the store's own writesOf, so each transaction writes the same bytes under the same conditions. The
// floor is its table's only writer and keeps the machines it seeded, so it never reads a machine to rewrite it:
// that read is the service's cost (its index holds keys only), not the contract's.
//
// Outside the timed calls the floor does what the site's reactions do between a tenant's calls, through the store
// and the same domain decisions: the instance claimed and Ready before its release, and after it the machine clean
// and back in the pool, the instance Terminated.

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

export interface FloorSetting {
  endpoint: string;
  id: string;
  /** The API site's table, whose items are copied. */
  siteTable: string;
  machineType: string;
  /** Who creates and releases: the API side's tenant. */
  org: string;
  actor: string;
  /** Idle pause before each timed call (stats.ts settle). */
  settleMs: number;
}

/** The site's catalog and heartbeat copied as they are, and its free machines of the type written as the store writes them. */
async function copySiteItems(setting: FloorSetting, to: DynamoDBDocumentClient, toTable: string): Promise<Machine[]> {
  const sourceClient = createDocumentClient(setting.endpoint);
  for (const key of [keys.siteCatalog, keys.siteHeartbeat]) {
    const { Item } = await sourceClient.send(new GetCommand({ TableName: setting.siteTable, Key: key, ConsistentRead: true }));
    if (!Item) throw new Error(`bench floor: the site table has no ${key.pk}/${key.sk} item to copy`);
    await to.send(new PutCommand({ TableName: toTable, Item }));
  }
  const source = new DynamoFleetStore(sourceClient, setting.siteTable, dueTimes);
  const machines: Machine[] = [];
  let nextToken: string | undefined;
  do {
    const page = await source.allocatableMachinesPage(setting.machineType, { limit: 100, nextToken });
    machines.push(...page.items);
    nextToken = page.nextToken;
  } while (nextToken);
  for (const machine of machines) await to.send(new PutCommand({ TableName: toTable, Item: machineItem(machine, dueTimes.machine(machine)) }));
  return machines;
}

/** A decision's writes as one transaction, as dynamo-items.ts writeItems sends a change of several items. */
function transactionOf(tableName: string, change: Change): TransactWriteCommand {
  const writes = writesOf(change, () => randomUUID().slice(0, 8), dueTimes);
  return new TransactWriteCommand({ TransactItems: writes.map((write) => transactItemOf(tableName, write)) });
}

/** The records a committed change left, versions as the store numbers them. */
const committedMachines = (change: Change): Machine[] =>
  (change.machines ?? []).map(({ before, after }) => ({ ...after, version: (before?.version ?? -1) + 1 }));
const committedInstance = (change: Change): Instance => {
  const { before, after } = change.instances![0]!;
  return { ...after, version: (before?.version ?? -1) + 1 };
};

export async function startFloor(setting: FloorSetting): Promise<Floor> {
  const tableName = `bench-floor-${setting.id}`;
  const admin = new DynamoDBClient({ endpoint: setting.endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  await admin.send(new CreateTableCommand(tableDefinition(tableName)));
  await waitUntilTableExists({ client: admin, maxWaitTime: 30 }, { TableName: tableName });

  // The timed requests go through a client of their own, metered as the API side's site client is (counter.ts).
  const timed = createDocumentClient(setting.endpoint);
  const seeded = await copySiteItems(setting, timed, tableName);
  if (seeded.length === 0) throw new Error('bench floor: no allocatable machines to copy from the site table');
  const requests = countRequests(timed);
  // What the site's reactions do between a tenant's calls goes through the store, on a client outside the meter.
  const reactions = new DynamoFleetStore(createDocumentClient(setting.endpoint), tableName, dueTimes);
  const machines = new Map(seeded.map((machine) => [machine.id, machine]));
  const remember = (change: Change) => {
    for (const machine of committedMachines(change)) machines.set(machine.id, machine);
  };

  const timedCall = async <T>(call: () => Promise<T>) => {
    await settle(setting.settleMs);
    const before = snapshot(requests);
    const started = performance.now();
    const value = await call();
    return { value, ms: performance.now() - started, cost: subtractCost(snapshot(requests), before) };
  };

  // The floor reads one rack's partition of the allocatable index, a rack it knows has a free machine.
  const freeRack = () => [...machines.values()].find(inAllocatableIndex)?.rack ?? '';
  const create = () =>
    timedCall(async () => {
      const { Items } = await timed.send(
        new QueryCommand({
          TableName: tableName,
          IndexName: indexes.allocatable.name,
          KeyConditionExpression: '#pk = :pk',
          ExpressionAttributeNames: { '#pk': indexes.allocatable.pk },
          ExpressionAttributeValues: { ':pk': allocatablePartition(setting.machineType, freeRack()) },
          Limit: 1,
        }),
      );
      const entry = Items?.[0];
      const machine = entry && machines.get(machineIdOfKey(String(entry.pk)));
      if (!machine) throw new Error('bench floor: no allocatable machine');
      const id = randomIds.next('i');
      const spec = { id, org: setting.org, name: id, labels: {}, clientToken: randomIds.next('ct'), createdBy: setting.actor };
      const { change } = assignInstance(machine, spec, new Date());
      await timed.send(transactionOf(tableName, change));
      remember(change);
      return committedInstance(change);
    });

  const release = (instanceId: string) =>
    timedCall(async () => {
      const { Item } = await timed.send(new GetCommand({ TableName: tableName, Key: keys.instance(instanceId), ConsistentRead: true }));
      if (!Item) throw new Error(`bench floor: instance ${instanceId} is missing`);
      const instance = fromInstanceItem(Item);
      const report = { actor: setting.actor, isRepairTenant: false, policy: { kind: 'off' as const } };
      const decision = releaseInstance(instance, machines.get(instance.machineId)!, report, new Date());
      if (decision.kind !== 'release') throw new Error(`bench floor: instance ${instanceId} was not released`);
      await timed.send(transactionOf(tableName, decision.change));
      remember(decision.change);
      return committedInstance(decision.change);
    });

  /** The site's reaction to a new instance: its create claimed, the agent's answer recorded, the instance Ready. */
  const provision = async (instance: Instance): Promise<void> => {
    const claim = claimCreate(instance, new Date(), 60_000)!;
    await reactions.commit(claim);
    const answer = { ok: true as const, siteName: instance.siteName, attempts: 1 };
    const ready = completeCreate(committedInstance(claim), machines.get(instance.machineId)!, answer, new Date())!;
    await reactions.commit(ready);
  };

  /** The site's reaction to a release: the agent's cleanup done, the machine back in the pool, the instance Terminated. */
  const clean = async (instance: Instance): Promise<void> => {
    const done = finishCleanup(machines.get(instance.machineId)!, instance, { ok: true }, 'site-agent', new Date());
    await reactions.commit(done);
    remember(done);
  };

  const cycle = async (): Promise<FloorCycle> => {
    const created = await create();
    await provision(created.value);
    const released = await release(created.value.id);
    await clean(released.value);
    return { createMs: created.ms, releaseMs: released.ms, createCost: created.cost, releaseCost: released.cost };
  };

  return {
    tableName,
    seeded: { machines: seeded.length },
    cycle,
    async stop() {
      await admin.send(new DeleteTableCommand({ TableName: tableName })).catch(() => {});
      admin.destroy();
    },
  };
}
