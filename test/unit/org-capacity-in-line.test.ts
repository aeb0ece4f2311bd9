import { describe, expect, it } from 'vitest';
import { capacityChange, type CapacityNode } from '#domain/capacity/org-capacity.ts';
import { aMachine, anInstance, AT, NOW } from '#test/support/fixtures.ts';
import { iso } from '#domain/core/time.ts';

const machine = aMachine({ id: 'm-1', instanceId: 'i-1' });
const instance = anInstance({ id: 'i-1', org: 'acme', machineId: 'm-1', status: 'Ready' });
const reconcile = (nodes: CapacityNode[], now: string) =>
  capacityChange({
    machineIds: [machine.id],
    machines: new Map([[machine.id, machine]]),
    instances: new Map([[instance.id, instance]]),
    nodes: new Map(nodes.map((n) => [n.machineId, n])),
    shards: new Map(),
    feedHeads: new Map(),
    now,
  }).change;

/** The same object with its keys listed in reverse, as a table may return a map. */
const reversed = <T extends object>(value: T): T => Object.fromEntries(Object.entries(value).reverse()) as T;

describe("a machine's capacity node", () => {
  it('once counted, is in line: a second reconcile, later, writes nothing', () => {
    const counted = reconcile([], AT)!.orgCapacity!.nodes.map(({ after }) => ({ ...after, version: 1 }));
    expect(counted).toHaveLength(1);
    expect(reconcile(counted, iso(NOW))).toBeNull();
  });

  it('read back with its fields in another order is still in line, so nothing is rewritten', () => {
    const [node] = reconcile([], AT)!.orgCapacity!.nodes.map(({ after }) => ({ ...after, version: 1 }));
    const readBack = { ...node!, entry: reversed(node!.entry!), standing: reversed(node!.standing!) };
    expect(Object.keys(readBack.entry)).not.toEqual(Object.keys(node!.entry!));
    expect(reconcile([readBack], iso(NOW))).toBeNull();
  });
});
