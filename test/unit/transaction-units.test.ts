import { describe, expect, it } from 'vitest';
import { itemBytes, transactionWriteUnits } from '../../bench/transaction-units.ts';
import { machineItem } from '#store/items.ts';
import { aMachine } from '#test/support/fixtures.ts';

describe('transactionWriteUnits (DynamoDB pricing, which DynamoDB Local does not follow for transactions)', () => {
  const put = (Item: Record<string, unknown>) => ({ Put: { TableName: 't', Item } });

  it('each item twice per started KB, and once per started KB for each GSI whose keys it carries', () => {
    const machine = machineItem(aMachine({ id: 'm-1' }));
    expect(itemBytes(machine)).toBeLessThan(1024);
    // A free machine is in byKind and allocatable: 2 for the table, 1 for each index.
    expect(transactionWriteUnits({ TransactItems: [put(machine)] })).toBe(4);
    expect(transactionWriteUnits({ TransactItems: [put(machine), put({ ...machine, pk: 'MACHINE#m-2', kindSk: 'm-2' })] })).toBe(8);
    expect(transactionWriteUnits({ TransactItems: [put({ pk: 'p', sk: 's', blob: 'x'.repeat(1_500) })] })).toBe(4);
    expect(transactionWriteUnits({ TransactItems: [{ Delete: { TableName: 't', Key: { pk: 'p', sk: 's' } } }] })).toBe(2);
  });

  it('sizes names and values in UTF-8, lists and maps with their overhead', () => {
    expect(itemBytes({ pk: 'ab', n: 12345 })).toBe(2 + 2 + 1 + 4);
    expect(itemBytes({ é: 'ü' })).toBe(4);
    expect(itemBytes({ l: ['a', true], m: { k: 'v' } })).toBe(1 + (3 + 2 + 2) + 1 + (3 + 2 + 1));
    expect(itemBytes({ gone: undefined })).toBe(0);
  });
});
