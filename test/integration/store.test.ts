import { describe, expect, it } from 'vitest';
import { Rejection } from '#domain/rejection.ts';
import { DynamoFleetStore } from '#store/dynamo-store.ts';
import { MemoryFleetStore } from '#store/memory-store.ts';
import { decodePageToken, encodePageToken } from '#store/paging.ts';
import { storeContract } from '#test/support/store-contract.ts';
import { freshTables } from '#test/support/tables.ts';

// One contract, two implementations: what the services rely on holds on DynamoDB and in memory alike.
describe.each([
  {
    implementation: 'DynamoFleetStore',
    newStore: async () => {
      const { client, names } = await freshTables('store');
      return new DynamoFleetStore(client, names.table);
    },
  },
  { implementation: 'MemoryFleetStore', newStore: async () => new MemoryFleetStore() },
])('$implementation', ({ newStore }) => storeContract(newStore));

describe('page tokens', () => {
  const b64 = (text: string) => Buffer.from(text).toString('base64url');

  it('round-trip the key they encode', () => {
    const key = { pk: 'INSTANCE#i-1', sk: '#INSTANCE', orgPk: 'ORG#acme#INSTANCE', orgSk: '2025-03-01T12:00:00.000Z#i-1' };
    expect(decodePageToken(encodePageToken(key)!)).toEqual(key);
    expect(encodePageToken(undefined)).toBeUndefined();
  });

  it.each([
    { name: 'not base64 JSON', token: 'not-a-token' },
    { name: 'punctuation', token: '!!!***' },
    { name: 'a number', token: b64('42') },
    { name: 'an array', token: b64('[1,2]') },
    { name: 'null', token: b64('null') },
    { name: 'a string', token: b64('"pk"') },
    { name: 'truncated JSON', token: b64('{"pk":"MACHINE#') },
  ])('garbage is a 422 Rejection: $name', ({ token }) => {
    let thrown: unknown;
    try {
      decodePageToken(token);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(Rejection);
    expect(thrown).toMatchObject({
      status: 422,
      code: 'validation-failed',
      errors: [{ path: 'query.nextToken', message: expect.any(String) }],
    });
  });
});
