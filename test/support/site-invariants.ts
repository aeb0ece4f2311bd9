import { ScanCommand, TransactGetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { SiteConfig } from '#config/site-config.ts';
import { publishedEvent } from '#domain/events/events.ts';
import { sameValue } from '#domain/core/same-value.ts';
import type { Instance, MetaInstance } from '#domain/core/model.ts';
import { surplusAllowed } from '#domain/meta-instances/member-replacement.ts';
import { createDocumentClient } from '#store/client.ts';
import { fromInstanceItem } from '#store/aggregates/instance-items.ts';
import { fromMetaInstanceItem } from '#store/aggregates/meta-instance-items.ts';
import { outboxEntryOf } from '#store/aggregates/event-items.ts';

/**
 * The safety rules a site must keep at every moment, whatever AWS does to it (docs/design.md, "What AWS does that
 * DynamoDB Local does not"): no machine held by two live instances, no meta-instance with more live members than it
 * asked for, no more replacements provisioning than the site's cap. Checked on consistent reads of the table, not on
 * the indexes the site itself might be misled by.
 */

type Item = Record<string, unknown>;
export interface Violation {
  rule: 'machine-held-twice' | 'meta-instance-over-min-nodes' | 'replacements-over-cap';
  detail: string;
  /** The items that show it: re-read together, atomically, before a violation is believed. */
  keys: { pk: string; sk: string }[];
}

const LIVE: ReadonlySet<Instance['status']> = new Set(['Provisioning', 'Ready', 'Repairing']);
const keyOf = (item: Item) => ({ pk: String(item.pk), sk: String(item.sk) });

export function violationsOf(items: readonly Item[], config: Pick<SiteConfig, 'meta_instance'>): Violation[] {
  const instances = items.filter((i) => i.entity === 'instance');
  const live = instances.filter((i) => LIVE.has(fromInstanceItem(i).status));
  const found: Violation[] = [];

  const byMachine = groupBy(live, (i) => fromInstanceItem(i).machineId);
  for (const [machineId, holders] of byMachine) {
    if (holders.length > 1) {
      found.push({ rule: 'machine-held-twice', detail: `machine ${machineId} is held by ${holders.map((i) => i.id).join(', ')}`, keys: holders.map(keyOf) });
    }
  }

  const byMeta = groupBy(
    live.filter((i) => fromInstanceItem(i).metaInstanceId),
    (i) => fromInstanceItem(i).metaInstanceId!,
  );
  for (const metaItem of items.filter((i) => i.entity === 'meta-instance')) {
    const meta: MetaInstance = fromMetaInstanceItem(metaItem);
    const members = byMeta.get(meta.id) ?? [];
    // A successor placed before its outgoing member is released is the one surplus a replacement may hold.
    const allowed = meta.minNodes + surplusAllowed(meta);
    if (members.length > allowed) {
      found.push({
        rule: 'meta-instance-over-min-nodes',
        detail: `meta-instance ${meta.id} may hold ${allowed} (minNodes ${meta.minNodes}), has ${members.length} live: ${members.map((i) => i.id).join(', ')}`,
        keys: [keyOf(metaItem), ...members.map(keyOf)],
      });
    }
  }

  const cap = config.meta_instance.max_replacements_in_flight;
  const replacing = instances.filter((i) => {
    const instance = fromInstanceItem(i);
    return instance.replacement && instance.status === 'Provisioning';
  });
  if (replacing.length > cap) {
    found.push({ rule: 'replacements-over-cap', detail: `${replacing.length} replacements provisioning, cap ${cap}`, keys: replacing.map(keyOf) });
  }
  return found;
}

function groupBy<T>(values: readonly T[], by: (value: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const value of values) groups.set(by(value), [...(groups.get(by(value)) ?? []), value]);
  return groups;
}

/** Outbox entries with no delivery marker, and ids delivered with two different contents (consumers dedupe on id). */
export function outboxFaults(items: readonly Item[], delivered: readonly { detail: Record<string, unknown> }[]): string[] {
  const markers = new Set(items.filter((i) => i.sk === '#DELIVERED').map((i) => String(i.pk).slice('EVENT#'.length)));
  const published = new Map<string, Record<string, unknown>>();
  const faults: string[] = [];
  for (const event of delivered) {
    const id = String(event.detail.id);
    // Whatever the order of the detail's keys: the stream's image and the sweep's read of one entry may list them apart.
    if (published.has(id) && !sameValue(published.get(id), event.detail)) faults.push(`event ${id} was delivered twice with different contents`);
    published.set(id, event.detail);
  }
  for (const item of items) {
    const outbox = outboxEntryOf(item);
    if (!outbox) continue;
    const { type, detail } = publishedEvent(outbox);
    const id = String(detail.id);
    if (!markers.has(id)) faults.push(`${type} ${id} (outbox ${outbox.key}) has no delivery marker`);
    if (!published.has(id)) faults.push(`${type} ${id} (outbox ${outbox.key}) never reached the bus`);
  }
  return faults;
}

export async function consistentScan(client: DynamoDBDocumentClient, table: string): Promise<Item[]> {
  const items: Item[] = [];
  let start: Item | undefined;
  do {
    const page = await client.send(new ScanCommand({ TableName: table, ConsistentRead: true, ...(start ? { ExclusiveStartKey: start } : {}) }));
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}

/**
 * A scan of many pages is not one moment: a violation it suggests is believed only when the items that show it,
 * read again in one transaction (one moment), still show it.
 */
async function confirmed(client: DynamoDBDocumentClient, table: string, suspect: Violation, config: Pick<SiteConfig, 'meta_instance'>) {
  if (suspect.keys.length > 100) return true;
  const read = await client.send(new TransactGetCommand({ TransactItems: suspect.keys.map((Key) => ({ Get: { TableName: table, Key } })) }));
  const items = (read.Responses ?? []).flatMap((r) => (r.Item ? [r.Item] : []));
  return violationsOf(items, config).some((v) => v.rule === suspect.rule);
}

export interface InvariantWatch {
  /** Stops sampling; resolves to every confirmed violation seen, each once. */
  stop(): Promise<string[]>;
}

/** Samples the site's table every `intervalMs` while it runs, on a client of its own that AWS's semantics do not touch. */
export function watchInvariants(endpoint: string, table: string, config: Pick<SiteConfig, 'meta_instance'>, intervalMs = 250): InvariantWatch {
  const client = createDocumentClient(endpoint);
  const seen = new Set<string>();
  let running = true;
  const sample = async () => {
    for (const suspect of violationsOf(await consistentScan(client, table), config)) {
      if (!seen.has(suspect.detail) && (await confirmed(client, table, suspect, config))) seen.add(suspect.detail);
    }
  };
  const loop = (async () => {
    while (running) {
      await sample().catch((error: unknown) => {
        // A table the test already dropped ends the watch; anything else is the watch's own fault, and shown.
        if ((error as { name?: string }).name === 'ResourceNotFoundException') running = false;
        else seen.add(`invariant watch failed: ${String(error)}`);
      });
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      await sample().catch(() => undefined);
      client.destroy();
      return [...seen];
    },
  };
}
