import { Rejection } from '#domain/core/rejection.ts';

/**
 * An item's size as DynamoDB counts it against its limits (400 KB an item, 4 MB a transaction): each attribute's
 * name in UTF-8 plus its value. A string is its UTF-8 bytes; a number about one byte per two significant digits
 * plus one (21 at most); a boolean or null one byte; a list or map 3 bytes plus one per element, plus the elements
 * (a map's element with its name); a set its elements. Items are the document client's plain values.
 */
export function itemSizeBytes(item: Record<string, unknown>): number {
  let size = 0;
  for (const [name, value] of Object.entries(item)) if (value !== undefined) size += Buffer.byteLength(name) + valueSize(value);
  return size;
}

function valueSize(value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(value);
  if (typeof value === 'number' || typeof value === 'bigint') return numberSize(String(value));
  if (typeof value === 'boolean' || value === null) return 1;
  if (value instanceof Uint8Array) return value.byteLength;
  if (value instanceof Set) return [...value].reduce((sum: number, element) => sum + valueSize(element), 0);
  if (Array.isArray(value)) return 3 + value.reduce((sum: number, element) => sum + 1 + valueSize(element), 0);
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, inner]) => inner !== undefined);
    return 3 + entries.reduce((sum, [name, inner]) => sum + 1 + Buffer.byteLength(name) + valueSize(inner), 0);
  }
  throw new Error(`no DynamoDB size for a ${typeof value}`);
}

function numberSize(text: string): number {
  const digits = text.replace(/^-/, '').replace(/e.*$/i, '').replace('.', '').replace(/^0+/, '').replace(/0+$/, '');
  return Math.min(21, Math.ceil(Math.max(1, digits.length) / 2) + 1);
}

/** DynamoDB's size limits: one item, and one transaction's items together. */
export const ITEM_LIMIT_BYTES = 400 * 1024;
export const TRANSACTION_LIMIT_BYTES = 4 * 1024 * 1024;

/**
 * A change DynamoDB would refuse for its size is refused here first, the same in both stores, as the 413 of the
 * request that made it so large (a roster of very long ids), instead of an opaque ValidationException.
 */
export function checkTransactionSize(items: Array<Record<string, unknown>>): void {
  let total = 0;
  for (const item of items) {
    const size = itemSizeBytes(item);
    if (size > ITEM_LIMIT_BYTES) {
      throw new Rejection(
        413,
        'payload-too-large',
        `the record ${String(item.pk)} would be ${size} bytes, over DynamoDB's ${ITEM_LIMIT_BYTES} per item`,
        undefined,
        ITEM_LIMIT_BYTES,
      );
    }
    total += size;
  }
  if (total > TRANSACTION_LIMIT_BYTES) {
    throw new Rejection(
      413,
      'payload-too-large',
      `the change would be ${total} bytes, over DynamoDB's ${TRANSACTION_LIMIT_BYTES} per transaction`,
      undefined,
      TRANSACTION_LIMIT_BYTES,
    );
  }
}
