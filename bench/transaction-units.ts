import type { TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { indexes } from '#store/table.ts';

/**
 * What a TransactWriteItems costs by DynamoDB's rules, for DynamoDB Local reports a whole transaction as if it wrote
 * one item (65 machine puts in one transaction: 6 units, where the same 65 puts in BatchWriteItem report 195).
 * DynamoDB writes each item of a transaction twice, to prepare and to commit: 2 units per started KB. Each GSI
 * whose keys the written item carries (every projection here is ALL) takes 1 unit per started KB of it. An item
 * that leaves an index also costs that index a write, which the request does not show, so this is a lower bound.
 * Updates, deletes and condition checks (the store sends none) count as a 1 KB item in no index.
 */
export function transactionWriteUnits(input: TransactWriteCommandInput): number {
  let units = 0;
  for (const action of input.TransactItems ?? []) {
    const item = action.Put?.Item;
    if (!item) {
      units += 2;
      continue;
    }
    const kilobytes = Math.ceil(itemBytes(item) / 1024);
    const inIndexes = Object.values(indexes).filter((index) => item[index.pk] !== undefined && item[index.sk] !== undefined).length;
    units += 2 * kilobytes + inIndexes * kilobytes;
  }
  return units;
}

/** An item's size as DynamoDB counts it: attribute names and values, in UTF-8 bytes (numbers approximated). */
export function itemBytes(item: Record<string, unknown>): number {
  return Object.entries(item).reduce((sum, [name, value]) => sum + (value === undefined ? 0 : Buffer.byteLength(name) + valueBytes(value)), 0);
}

function valueBytes(value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(value);
  if (typeof value === 'number') return Math.ceil(String(Math.abs(value)).replace('.', '').length / 2) + 1;
  if (typeof value === 'boolean' || value === null) return 1;
  // Lists and maps: 3 bytes, and 1 per element besides its own size (a map's names included).
  if (Array.isArray(value)) return 3 + value.reduce<number>((sum, element) => sum + 1 + valueBytes(element), 0);
  if (typeof value === 'object') return 3 + itemBytes(value as Record<string, unknown>) + Object.keys(value).length;
  return 0;
}
