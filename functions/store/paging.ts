import { Rejection } from '#domain/rejection.ts';

export interface Page<T> {
  items: T[];
  nextToken?: string | undefined;
}

/** Page tokens are opaque to clients: the DynamoDB key, base64url-encoded. */
export function encodePageToken(lastKey: Record<string, unknown> | undefined): string | undefined {
  return lastKey ? Buffer.from(JSON.stringify(lastKey)).toString('base64url') : undefined;
}

export function decodePageToken(token: string): Record<string, unknown> {
  try {
    const key = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    if (key && typeof key === 'object' && !Array.isArray(key)) return key;
  } catch {
    // fall through to the rejection below
  }
  throw invalidPageToken();
}

export const invalidPageToken = () =>
  new Rejection(422, 'validation-failed', 'nextToken is not a token this listing issued', [
    { path: 'query.nextToken', message: 'not a token this listing issued' },
  ]);
