import { describe, expect, it } from 'vitest';
import { itemBytes, putWriteUnits, transactionWriteUnits } from '../../bench/write-units.ts';
import type { Machine } from '#domain/core/model.ts';
import { dueTimes } from '#reconcilers/due-times.ts';
import { machineItem } from '#store/aggregates/machine-items.ts';
import { aMachine } from '#test/support/fixtures.ts';

describe('write units by DynamoDB pricing, which DynamoDB Local does not follow for transactions', () => {
  const created = (Item: Record<string, unknown>) => ({ TableName: 't', Item, ConditionExpression: 'attribute_not_exists(pk)' });
  const updated = (Item: Record<string, unknown>) => ({ TableName: 't', Item, ConditionExpression: 'version = :expected' });
  // A free machine carries the keys of byKind and allocatable, both KEYS_ONLY.
  const itemOf = (machine: Machine) => machineItem(machine, dueTimes.machine(machine));
  const machine = itemOf(aMachine({ id: 'm-1' }));
  const repairing = itemOf(
    aMachine({ id: 'm-2', healthOverrides: [{ source: 'repair-request', mode: 'merge', alerts: [], createdAt: 'now', createdBy: 'x' }] as never }),
  );

  it('a transaction writes each item twice per started KB; a KEYS_ONLY index costs 1 to enter and nothing to update', () => {
    expect(itemBytes(machine)).toBeLessThan(1024);
    expect(transactionWriteUnits({ TransactItems: [{ Put: created(machine) }] })).toBe(4);
    expect(transactionWriteUnits({ TransactItems: [{ Put: updated(machine) }] })).toBe(2);
    expect(transactionWriteUnits({ TransactItems: [{ Put: updated(machine) }, { Put: updated({ ...machine, pk: 'MACHINE#m-3', kindSk: 'm-3' }) }] })).toBe(4);
    expect(transactionWriteUnits({ TransactItems: [{ Put: created({ pk: 'p', sk: 's', blob: 'x'.repeat(1_500) }) }] })).toBe(4);
    expect(transactionWriteUnits({ TransactItems: [{ Delete: { TableName: 't', Key: { pk: 'p', sk: 's' } } }] })).toBe(2);
  });

  it('an index that projects ALL costs 1 per started KB of every write that carries its keys', () => {
    expect(repairing.repairPk).toBeDefined();
    expect(putWriteUnits(updated(repairing))).toBe(1 + 1);
  });

  it('a PutItem writes its item once per started KB, its indexes as in a transaction', () => {
    expect(putWriteUnits(updated(machine))).toBe(1);
    expect(putWriteUnits(created(machine))).toBe(3);
    expect(putWriteUnits(created({ pk: 'p', sk: 's', blob: 'x'.repeat(1_500) }))).toBe(2);
  });

  it('sizes names and values in UTF-8, lists and maps with their overhead', () => {
    expect(itemBytes({ pk: 'ab', n: 12345 })).toBe(2 + 2 + 1 + 4);
    expect(itemBytes({ é: 'ü' })).toBe(4);
    expect(itemBytes({ l: ['a', true], m: { k: 'v' } })).toBe(1 + (3 + 2 + 2) + 1 + (3 + 2 + 1));
    expect(itemBytes({ gone: undefined })).toBe(0);
  });
});
