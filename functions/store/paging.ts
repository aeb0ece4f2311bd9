import { createHash } from 'node:crypto';
import { Rejection } from '#domain/core/rejection.ts';
import { indexes } from '#store/table.ts';

export interface Page<T> {
  items: T[];
  nextToken?: string | undefined;
}

/** One listing a token may continue: the index it reads, the partition, and whatever else shapes its pages. */
export interface Listing {
  /** A GSI of the table, or `table` for the base table's own key. */
  index: keyof typeof indexes | 'table';
  /** The partition value the query reads: a token's key must hold exactly this one. */
  partition: string;
  /** Anything else that decides what a page holds (sort key range, filter, order); compared, never sent. */
  scope?: unknown;
}

/** DynamoDB allows 2048 bytes for a partition key and 1024 for a sort key; ours are far shorter. */
const maxKeyValueBytes = 1024;

/**
 * Page tokens are opaque to clients: the DynamoDB key of the last item, bound to the listing that issued it. A token
 * is checked strictly before its key goes near the SDK, whose marshaller throws plain Errors for values no listing
 * ever issues (out-of-range numbers, nested objects): exactly this index's key attributes, each a bounded string,
 * the partition equal to the query's own, and the same listing (so another org's or another route's token is refused).
 */
export function encodePageToken(listing: Listing, lastKey: Record<string, unknown> | undefined): string | undefined {
  if (!lastKey) return undefined;
  return Buffer.from(JSON.stringify({ listing: listingDigest(listing), key: lastKey })).toString('base64url');
}

export function decodePageToken(listing: Listing, token: string): Record<string, string> {
  const decoded = parseToken(token);
  if (!isRecord(decoded) || !hasExactly(decoded, ['key', 'listing'])) throw invalidPageToken('not a page token');
  if (decoded.listing !== listingDigest(listing)) throw invalidPageToken('issued by another listing');
  const key = decoded.key;
  const attributes = keyAttributes(listing.index);
  if (!isRecord(key) || !hasExactly(key, attributes)) throw invalidPageToken('not a key of this listing');
  for (const name of attributes) {
    const value = key[name];
    if (typeof value !== 'string' || value === '' || Buffer.byteLength(value) > maxKeyValueBytes) throw invalidPageToken('not a key of this listing');
  }
  if (key[partitionAttribute(listing.index)] !== listing.partition) throw invalidPageToken('issued by another listing');
  return key as Record<string, string>;
}

export const invalidPageToken = (reason = 'not a token this listing issued') =>
  new Rejection(422, 'invalid-page-token', `nextToken is not a token this listing issued (${reason})`, [{ path: 'query.nextToken', message: reason }]);

function parseToken(token: string): unknown {
  // base64url only: anything else (padding, `+/`, spaces) was not written by encodePageToken.
  if (!/^[A-Za-z0-9_-]+$/.test(token)) return undefined;
  try {
    return JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && Object.getPrototypeOf(value) === Object.prototype;

const hasExactly = (record: Record<string, unknown>, names: readonly string[]) => {
  const own = Object.keys(record);
  return own.length === names.length && names.every((name) => Object.hasOwn(record, name));
};

/** A GSI's LastEvaluatedKey holds its own key and the table's, exactly. */
const keyAttributes = (index: Listing['index']): string[] => (index === 'table' ? ['pk', 'sk'] : ['pk', 'sk', indexes[index].pk, indexes[index].sk]);

const partitionAttribute = (index: Listing['index']) => (index === 'table' ? 'pk' : indexes[index].pk);

const listingDigest = (listing: Listing) =>
  createHash('sha256')
    .update(JSON.stringify([listing.index, listing.partition, listing.scope ?? null]))
    .digest('base64url')
    .slice(0, 22);

/** Where a listing merged from several partitions stands in one of them: not begun, a page token in it, or read to its end. */
export type PartitionCursor = string | null | 'done';

/**
 * A page token of a listing merged from `count` partitions: one cursor per partition, each a page token of that
 * partition's own listing (checked by decodePageToken when it is used), bound to the listing's scope, so that another
 * such listing's token (another org's, another filter's) is refused even where its cursors name no key.
 */
export function encodeMergedPageToken(scope: string, cursors: readonly PartitionCursor[]): string | undefined {
  if (cursors.every((cursor) => cursor === 'done')) return undefined;
  return Buffer.from(JSON.stringify({ scope, cursors })).toString('base64url');
}

export function decodeMergedPageToken(scope: string, token: string | undefined, count: number): PartitionCursor[] {
  if (token === undefined) return Array.from({ length: count }, () => null);
  const decoded = parseToken(token);
  if (!isRecord(decoded) || !hasExactly(decoded, ['scope', 'cursors'])) throw invalidPageToken('not a page token');
  if (decoded.scope !== scope) throw invalidPageToken('issued by another listing');
  const cursors = decoded.cursors;
  const valid = (cursor: unknown) => cursor === null || (typeof cursor === 'string' && cursor !== '');
  if (!Array.isArray(cursors) || cursors.length !== count || !cursors.every(valid)) throw invalidPageToken('not a token of this listing');
  return cursors as PartitionCursor[];
}

/**
 * Where a listing that reads its partitions one after another stands: the partition it reads next and the page token
 * in it (null: from its start), bound to the listing's scope (so another such listing's token is refused).
 */
export interface SequenceCursor {
  partition: string;
  token: string | null;
}

export function encodeSequencePageToken(scope: string, cursor: SequenceCursor | undefined): string | undefined {
  if (!cursor) return undefined;
  return Buffer.from(JSON.stringify({ scope, ...cursor })).toString('base64url');
}

/** The cursor a token holds; its inner token is checked by decodePageToken when it is used. */
export function decodeSequencePageToken(scope: string, token: string | undefined): SequenceCursor | undefined {
  if (token === undefined) return undefined;
  const decoded = parseToken(token);
  if (!isRecord(decoded) || !hasExactly(decoded, ['scope', 'partition', 'token'])) throw invalidPageToken('not a page token');
  if (decoded.scope !== scope) throw invalidPageToken('issued by another listing');
  const { partition, token: inner } = decoded;
  const bounded = (value: unknown) => typeof value === 'string' && value !== '' && Buffer.byteLength(value) <= maxKeyValueBytes;
  if (!bounded(partition) || !(inner === null || (typeof inner === 'string' && inner !== ''))) throw invalidPageToken('not a token of this listing');
  return { partition: partition as string, token: inner as string | null };
}
