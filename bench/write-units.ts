import type { PutCommandInput, TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { indexes } from '#store/table.ts';

/**
 * What a write costs by DynamoDB's rules, computed from the request, for DynamoDB Local reports a whole transaction
 * as if it wrote one item (65 machine puts in one transaction: 6 units, where the same 65 puts in BatchWriteItem
 * report 195); puts are priced the same way, so that every figure follows one rule.
 *
 * A PutItem writes its item once: 1 unit per started KB. A transaction writes each item twice, to prepare and to
 * commit: 2 units per started KB. Each GSI that projects ALL and whose keys the written item carries takes 1 unit
 * per started KB of it. A KEYS_ONLY index takes 1 unit (its entry is well under 1 KB) from an item that enters it,
 * priced as every new item (condition `attribute_not_exists`) carrying its keys, and nothing from an update. An
 * item that an update moves into a KEYS_ONLY index, or out of any index, costs that index a write which the request
 * does not show, so this is a lower bound. Updates, deletes and condition checks in a transaction (the store sends
 * none) count as a 1 KB item in no index.
 */
export function putWriteUnits(input: PutCommandInput): number {
  return itemWriteUnits(input, 1);
}

export function transactionWriteUnits(input: TransactWriteCommandInput): number {
  return (input.TransactItems ?? []).reduce((units, action) => units + (action.Put?.Item ? itemWriteUnits(action.Put, 2) : 2), 0);
}

function itemWriteUnits(put: { Item?: Record<string, unknown>; ConditionExpression?: string }, writesPerKilobyte: number): number {
  const item = put.Item ?? {};
  const kilobytes = Math.ceil(itemBytes(item) / 1024);
  const created = put.ConditionExpression?.startsWith('attribute_not_exists') ?? true;
  const carried = Object.values(indexes).filter((index) => item[index.pk] !== undefined && item[index.sk] !== undefined);
  const indexUnits = carried.reduce((units, index) => units + (index.projection === 'ALL' ? kilobytes : created ? 1 : 0), 0);
  return writesPerKilobyte * kilobytes + indexUnits;
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
