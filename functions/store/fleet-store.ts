import { randomUUID } from 'node:crypto';
import { TransactionCanceledException, type ConsumedCapacity } from '@aws-sdk/client-dynamodb';
import {
  GetCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type QueryCommandInput,
} from '@aws-sdk/lib-dynamodb';
import type { Catalog } from '#domain/catalog.ts';
import { emptyCatalog } from '#domain/catalog.ts';
import type { Change } from '#domain/change.ts';
import { ROSTER_RESET, type SiteHeartbeat } from '#domain/heartbeat.ts';
import type { SafetyState } from '#domain/safety.ts';
import type { HistoryEntry, Instance, Machine, MetaInstance, Tenant } from '#domain/model.ts';
import {
  DUE_PARTITION,
  REPAIR_PARTITION,
  entityRefOf,
  eventDeliveryItem,
  fromHistoryItem,
  fromInstanceItem,
  fromMachineItem,
  fromMetaInstanceItem,
  metaInstanceItem,
  fromTenantItem,
  historyItem,
  instanceItem,
  keys,
  machineItem,
  tenantItem,
  type EntityRef,
} from './items.ts';
import { indexes } from './table.ts';
import { StaleWriteError } from './port.ts';
import { decodePageToken, encodePageToken, invalidPageToken, type Listing, type Page } from './paging.ts';

const TRANSACTION_LIMIT = 100;

/** Write capacity consumed, for the benchmark's cost figures. */
export interface CapacityMeter {
  writeUnits: number;
  readUnits: number;
  writes: number;
}

export class FleetStore {
  readonly meter: CapacityMeter = { writeUnits: 0, readUnits: 0, writes: 0 };
  readonly client: DynamoDBDocumentClient;
  private readonly table: string;

  constructor(client: DynamoDBDocumentClient, table: string) {
    this.client = client;
    this.table = table;
  }

  async getMachine(id: string): Promise<Machine | null> {
    const item = await this.get(keys.machine(id));
    return item ? fromMachineItem(item) : null;
  }

  async getInstance(id: string): Promise<Instance | null> {
    const item = await this.get(keys.instance(id));
    return item ? fromInstanceItem(item) : null;
  }

  async getMetaInstance(id: string): Promise<MetaInstance | null> {
    const item = await this.get(keys.metaInstance(id));
    return item ? fromMetaInstanceItem(item) : null;
  }

  /** Instances bound to a meta-instance (all of them; the binding is the instance's own field). */
  async membersOf(metaInstanceId: string): Promise<Instance[]> {
    const items: Record<string, unknown>[] = [];
    let nextToken: string | undefined;
    do {
      const page = await this.query(
        {
          IndexName: indexes.members.name,
          KeyConditionExpression: '#pk = :pk',
          ExpressionAttributeNames: { '#pk': indexes.members.pk },
          ExpressionAttributeValues: { ':pk': `META#${metaInstanceId}` },
        },
        nextToken,
      );
      items.push(...page.items);
      nextToken = page.nextToken;
    } while (nextToken);
    return items.map(fromInstanceItem);
  }

  async listMetaInstances(org: string | null, page: { limit: number; nextToken?: string | undefined }): Promise<Page<MetaInstance>> {
    const index = org ? indexes.byOrg : indexes.byKind;
    const result = await this.query(
      {
        IndexName: index.name,
        KeyConditionExpression: '#pk = :pk',
        ExpressionAttributeNames: { '#pk': index.pk },
        ExpressionAttributeValues: { ':pk': org ? `ORG#${org}#META` : 'META' },
        ScanIndexForward: false,
        Limit: page.limit,
      },
      page.nextToken,
    );
    return { items: result.items.map(fromMetaInstanceItem), nextToken: result.nextToken };
  }

  /** Meta-instances waiting for machines of a type, oldest first: they get freed machines in order. */
  async waitingMetaInstances(machineType: string, limit: number): Promise<MetaInstance[]> {
    const result = await this.query({
      IndexName: indexes.waiting.name,
      KeyConditionExpression: '#pk = :pk',
      ExpressionAttributeNames: { '#pk': indexes.waiting.pk },
      ExpressionAttributeValues: { ':pk': `WAIT#${machineType}` },
      Limit: limit,
    });
    return result.items.map(fromMetaInstanceItem);
  }

  /** Meta-instance replacements still provisioning, site-wide (the replacing index holds only those). */
  async replacementsInFlight(): Promise<number> {
    const input = {
      IndexName: indexes.replacing.name,
      KeyConditionExpression: '#pk = :pk',
      ExpressionAttributeNames: { '#pk': indexes.replacing.pk },
      ExpressionAttributeValues: { ':pk': 'REPLACING' },
      Select: 'COUNT',
    } as const;
    let count = 0;
    let startKey: Record<string, unknown> | undefined;
    do {
      const result = await this.client.send(new QueryCommand({ TableName: this.table, ...input, ...(startKey ? { ExclusiveStartKey: startKey } : {}) }));
      count += result.Count ?? 0;
      startKey = result.LastEvaluatedKey;
    } while (startKey);
    return count;
  }

  async getTenant(org: string): Promise<Tenant | null> {
    const item = await this.get(keys.tenant(org));
    return item ? fromTenantItem(item) : null;
  }

  async getCatalog(): Promise<Catalog> {
    const item = await this.get(keys.siteCatalog);
    return item ? { types: item.types as Catalog['types'], version: item.version as number } : emptyCatalog();
  }

  async getSafety(): Promise<SafetyState | null> {
    const item = await this.get(keys.siteSafety);
    return item ? { repairStorm: item.repairStorm as SafetyState['repairStorm'], quarantines: item.quarantines as string[], version: item.version as number } : null;
  }

  async getSiteHeartbeat(): Promise<SiteHeartbeat | null> {
    const item = await this.get(keys.siteHeartbeat);
    if (!item) return null;
    return {
      // A registration may have reset the digest before any roster was ever stored.
      rosterSeenAt: typeof item.rosterSeenAt === 'string' ? item.rosterSeenAt : new Date(0).toISOString(),
      digest: String(item.digest),
      machineCount: Number(item.machineCount),
      ...(typeof item.reconcilingUntil === 'string' ? { reconcilingUntil: item.reconcilingUntil } : {}),
      version: Number(item.version),
    };
  }

  /** Candidates for allocation; the index is eventually consistent, so the claiming transaction re-checks. */
  async allocatableMachines(machineType: string, limit = 100): Promise<Machine[]> {
    const result = await this.query({
      IndexName: indexes.allocatable.name,
      KeyConditionExpression: '#pk = :pk',
      ExpressionAttributeNames: { '#pk': indexes.allocatable.pk },
      ExpressionAttributeValues: { ':pk': `ALLOC#${machineType}` },
      Limit: limit,
    });
    return result.items.map(fromMachineItem);
  }

  async listMachines(page: { limit: number; nextToken?: string | undefined }): Promise<Page<Machine>> {
    const result = await this.query(
      {
        IndexName: indexes.byKind.name,
        KeyConditionExpression: '#pk = :pk',
        ExpressionAttributeNames: { '#pk': indexes.byKind.pk },
        ExpressionAttributeValues: { ':pk': 'MACHINE' },
        Limit: page.limit,
      },
      page.nextToken,
    );
    return { items: result.items.map(fromMachineItem), nextToken: result.nextToken };
  }

  /**
   * Repairs that may be stuck: unclaimed requests older than `unclaimedBefore`, and every claimed repair (their
   * deadlines depend on each machine's repair_eta). Costs what is in repair, not what the fleet holds.
   */
  async repairsToWatch(unclaimedBefore: Date): Promise<Machine[]> {
    const machines: Machine[] = [];
    for (const [low, high] of [
      ['unclaimed#', `unclaimed#${unclaimedBefore.toISOString()}`],
      ['in-repair#', 'in-repair#~'],
    ]) {
      let nextToken: string | undefined;
      do {
        const page = await this.query(
          {
            IndexName: indexes.repairRequested.name,
            KeyConditionExpression: '#pk = :pk AND #sk BETWEEN :low AND :high',
            ExpressionAttributeNames: { '#pk': indexes.repairRequested.pk, '#sk': indexes.repairRequested.sk },
            ExpressionAttributeValues: { ':pk': REPAIR_PARTITION, ':low': low, ':high': high },
          },
          nextToken,
        );
        machines.push(...page.items.map(fromMachineItem));
        nextToken = page.nextToken;
      } while (nextToken);
    }
    return machines;
  }

  /** Machines with a repair request: unclaimed ones first, each stage oldest first (the repairRequested index). */
  async machinesAwaitingRepair(page: { limit: number; nextToken?: string | undefined }): Promise<Page<Machine>> {
    const result = await this.query(
      {
        IndexName: indexes.repairRequested.name,
        KeyConditionExpression: '#pk = :pk',
        ExpressionAttributeNames: { '#pk': indexes.repairRequested.pk },
        ExpressionAttributeValues: { ':pk': REPAIR_PARTITION },
        Limit: page.limit,
      },
      page.nextToken,
    );
    return { items: result.items.map(fromMachineItem), nextToken: result.nextToken };
  }

  async listInstances(org: string, page: { limit: number; nextToken?: string | undefined; status?: string | undefined }): Promise<Page<Instance>> {
    const result = await this.query(
      {
        IndexName: indexes.byOrg.name,
        KeyConditionExpression: '#pk = :pk',
        ExpressionAttributeNames: { '#pk': indexes.byOrg.pk, ...(page.status ? { '#status': 'status' } : {}) },
        ExpressionAttributeValues: { ':pk': `ORG#${org}#INSTANCE`, ...(page.status ? { ':status': page.status } : {}) },
        ...(page.status ? { FilterExpression: '#status = :status' } : {}),
        ScanIndexForward: false,
        Limit: page.limit,
      },
      page.nextToken,
    );
    return { items: result.items.map(fromInstanceItem), nextToken: result.nextToken };
  }

  async listHistory(machineId: string, page: { limit: number; nextToken?: string | undefined }): Promise<Page<HistoryEntry>> {
    const result = await this.query(
      {
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': keys.machine(machineId).pk, ':prefix': keys.historyPrefix },
        ScanIndexForward: false,
        Limit: page.limit,
      },
      page.nextToken,
    );
    return { items: result.items.map(fromHistoryItem), nextToken: result.nextToken };
  }

  /** What the sweep must look at: records whose due time has come. Costs what is due, not what the fleet holds. */
  async dueEntities(now: Date, limit: number): Promise<EntityRef[]> {
    const result = await this.query({
      IndexName: indexes.due.name,
      KeyConditionExpression: '#pk = :pk AND #due <= :now',
      ExpressionAttributeNames: { '#pk': indexes.due.pk, '#due': indexes.due.sk },
      ExpressionAttributeValues: { ':pk': DUE_PARTITION, ':now': now.toISOString() },
      Limit: limit,
    });
    return result.items.map(entityRefOf).filter((ref): ref is EntityRef => ref !== null);
  }

  /** Store the agent's roster time (and digest when it changed), guarded so concurrent beats cannot interleave. */
  async putSiteHeartbeat(before: SiteHeartbeat | null, after: Omit<SiteHeartbeat, 'version'>): Promise<SiteHeartbeat> {
    const version = (before?.version ?? 0) + 1;
    await this.guardedWrite(() =>
      this.client.send(
        new UpdateCommand({
          TableName: this.table,
          Key: keys.siteHeartbeat,
          UpdateExpression: `SET rosterSeenAt = :at, digest = :digest, machineCount = :count, version = :next${after.reconcilingUntil ? ', reconcilingUntil = :until' : ' REMOVE reconcilingUntil'}`,
          ConditionExpression: before ? 'version = :expected' : 'attribute_not_exists(version)',
          ExpressionAttributeValues: {
            ':at': after.rosterSeenAt,
            ':digest': after.digest,
            ':count': after.machineCount,
            ':next': version,
            ...(after.reconcilingUntil ? { ':until': after.reconcilingUntil } : {}),
            ...(before ? { ':expected': before.version } : {}),
          },
          ReturnConsumedCapacity: 'TOTAL',
        }),
      ),
    );
    return { ...after, version };
  }

  /**
   * Commit one decision as ONE transaction: every record guarded by the version it was read at (or by not
   * existing yet), history entries alongside. A lost race raises StaleWriteError and changes nothing.
   */
  async commit(change: Change): Promise<void> {
    const items: NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']> = [];
    const guarded = <T extends { version: number }>(
      pair: { before: T | null; after: T },
      toItem: (record: T) => Record<string, unknown>,
    ) => {
      const after = { ...pair.after, version: (pair.before?.version ?? -1) + 1 };
      items.push({
        Put: {
          TableName: this.table,
          Item: toItem(after),
          ConditionExpression: pair.before ? 'version = :expected' : 'attribute_not_exists(pk)',
          ...(pair.before ? { ExpressionAttributeValues: { ':expected': pair.before.version } } : {}),
        },
      });
    };
    for (const pair of change.machines ?? []) guarded(pair, machineItem);
    for (const pair of change.instances ?? []) guarded(pair, instanceItem);
    for (const pair of change.tenants ?? []) guarded(pair, tenantItem);
    for (const pair of change.metaInstances ?? []) guarded(pair, metaInstanceItem);
    if (change.catalog) guarded(change.catalog, (catalog) => ({ ...keys.siteCatalog, ...catalog }));
    if (change.safety) guarded(change.safety, (safety) => ({ ...keys.siteSafety, ...safety }));
    if (change.resetHeartbeatRoster) {
      items.push({
        Update: {
          TableName: this.table,
          Key: keys.siteHeartbeat,
          // Bumping the version makes a heartbeat that read the old digest lose its write instead of restoring it.
          UpdateExpression: 'SET digest = :none ADD version :one',
          ExpressionAttributeValues: { ':none': ROSTER_RESET, ':one': 1 },
        },
      });
    }
    for (const entry of change.history) {
      items.push({ Put: { TableName: this.table, Item: historyItem(entry, randomUUID().slice(0, 8)), ConditionExpression: 'attribute_not_exists(pk)' } });
    }
    if (items.length === 0) return;
    if (items.length > TRANSACTION_LIMIT) throw new Error(`a change of ${items.length} writes exceeds one transaction`);
    await this.guardedWrite(() => this.client.send(new TransactWriteCommand({ TransactItems: items, ReturnConsumedCapacity: 'TOTAL' })));
  }

  /**
   * Record that an event went out: a marker per event id, written only while there is none, and the `delivered`
   * history entry in the same transaction. False when its delivery was already recorded (a duplicated or
   * redelivered stream record); a transaction conflict is thrown, so the caller's record is retried.
   */
  async recordEventDelivery(eventId: string, delivered: HistoryEntry): Promise<boolean> {
    const marker = { Put: { TableName: this.table, Item: eventDeliveryItem(eventId, delivered), ConditionExpression: 'attribute_not_exists(pk)' } };
    const history = { Put: { TableName: this.table, Item: historyItem(delivered, randomUUID().slice(0, 8)), ConditionExpression: 'attribute_not_exists(pk)' } };
    try {
      await this.write(() => this.client.send(new TransactWriteCommand({ TransactItems: [marker, history], ReturnConsumedCapacity: 'TOTAL' })));
      return true;
    } catch (error) {
      if ((error as TransactionCanceledException).CancellationReasons?.[0]?.Code === 'ConditionalCheckFailed') return false;
      throw error;
    }
  }

  private async guardedWrite(send: Parameters<FleetStore['write']>[0]): Promise<void> {
    try {
      await this.write(send);
    } catch (error) {
      if (isLostRace(error)) throw new StaleWriteError('a record changed since it was read');
      throw error;
    }
  }

  private async get(key: { pk: string; sk: string }): Promise<Record<string, unknown> | undefined> {
    const result = await this.client.send(
      new GetCommand({ TableName: this.table, Key: key, ConsistentRead: true, ReturnConsumedCapacity: 'TOTAL' }),
    );
    this.meter.readUnits += capacityUnits(result.ConsumedCapacity);
    return result.Item;
  }

  private async query(input: Omit<QueryCommandInput, 'TableName'>, nextToken?: string) {
    const listing = listingOf(input);
    const result = await this.client
      .send(
        new QueryCommand({
          TableName: this.table,
          ...input,
          ...(nextToken ? { ExclusiveStartKey: decodePageToken(listing, nextToken) } : {}),
          ReturnConsumedCapacity: 'TOTAL',
        }),
      )
      .catch((error: Error) => {
        // A well-formed token from another listing is still not this listing's token: bad input, not a fault.
        if (nextToken && error.name === 'ValidationException') throw invalidPageToken();
        throw error;
      });
    this.meter.readUnits += capacityUnits(result.ConsumedCapacity);
    return { items: result.Items ?? [], nextToken: encodePageToken(listing, result.LastEvaluatedKey) };
  }

  private async write(send: () => Promise<{ ConsumedCapacity?: ConsumedCapacity | ConsumedCapacity[] | undefined }>) {
    const result = await send();
    this.meter.writes += 1;
    this.meter.writeUnits += capacityUnits(result.ConsumedCapacity);
    return result;
  }
}

/** What a page token of this query is bound to: every query's partition is `:pk`; the rest shapes its pages. */
function listingOf(input: Omit<QueryCommandInput, 'TableName'>): Listing {
  const { ':pk': partition, ...rangeAndFilter } = input.ExpressionAttributeValues ?? {};
  return {
    index: (input.IndexName ?? 'table') as Listing['index'],
    partition: String(partition),
    scope: [input.KeyConditionExpression, input.FilterExpression ?? null, rangeAndFilter, input.ScanIndexForward ?? true],
  };
}

function capacityUnits(consumed: ConsumedCapacity | ConsumedCapacity[] | undefined): number {
  const list = Array.isArray(consumed) ? consumed : consumed ? [consumed] : [];
  return list.reduce((sum, c) => sum + (c.CapacityUnits ?? 0), 0);
}

function isLostRace(error: unknown): boolean {
  if (error instanceof TransactionCanceledException || (error as Error).name === 'TransactionCanceledException') {
    const reasons = (error as TransactionCanceledException).CancellationReasons ?? [];
    return reasons.some((r) => r.Code === 'ConditionalCheckFailed' || r.Code === 'TransactionConflict');
  }
  return (error as Error).name === 'TransactionConflictException' || (error as Error).name === 'ConditionalCheckFailedException';
}
