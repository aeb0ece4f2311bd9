import { describe, expect, it } from 'vitest';
import { catalogAfter, emptyCatalog, rackPicker, type Catalog } from '#domain/machines/catalog.ts';
import type { Versioned } from '#domain/core/change.ts';
import type { Machine } from '#domain/core/model.ts';
import { aMachine } from '#test/support/fixtures.ts';

const machine = (id: string, machineType: string, rack: string): Machine => aMachine({ id, machineType, rack, heartbeatLive: false });

const registered = (m: Machine): Versioned<Machine> => ({ before: null, after: m });
const moved = (before: Machine, machineType: string, rack: string): Versioned<Machine> => ({
  before,
  after: { ...before, machineType, rack },
});

describe('catalogAfter', () => {
  it('counts new machines per type and rack', () => {
    const next = catalogAfter(emptyCatalog(), [
      registered(machine('a', 'gb200', 'r1')),
      registered(machine('b', 'gb200', 'r1')),
      registered(machine('c', 'gb200', 'r2')),
      registered(machine('d', 'h100', 'r9')),
    ]);
    expect(next).toEqual({
      types: { gb200: { count: 3, racks: { r1: 2, r2: 1 } }, h100: { count: 1, racks: { r9: 1 } } },
      version: 0,
    });
  });

  it('counts machines per NVLink domain for a type whose machines carry one, and follows a move between domains', () => {
    const a = aMachine({ id: 'a', rack: 'r1', nvlinkDomain: 'd1' });
    const next = catalogAfter(emptyCatalog(), [registered(a), registered(aMachine({ id: 'b', rack: 'r2', nvlinkDomain: 'd1' }))])!;
    expect(next.types.gb200).toEqual({ count: 2, racks: { r1: 1, r2: 1 }, nvlinkDomains: { d1: 2 }, domainRacks: { d1: { r1: 1, r2: 1 } } });
    const movedDomain = catalogAfter(next, [{ before: a, after: { ...a, nvlinkDomain: 'd2' } }])!.types.gb200!;
    expect(movedDomain.nvlinkDomains).toEqual({ d1: 1, d2: 1 });
    expect(movedDomain.domainRacks).toEqual({ d1: { r2: 1 }, d2: { r1: 1 } });
    expect(catalogAfter(next, [{ before: a, after: { ...a } }])).toBeNull();
  });

  it('adds to an existing catalog, keeping its version (the store guards on it) and leaving the input alone', () => {
    const current: Catalog = { types: { gb200: { count: 2, racks: { r1: 2 } } }, version: 4 };
    const snapshot = structuredClone(current);
    const next = catalogAfter(current, [registered(machine('c', 'gb200', 'r1')), registered(machine('d', 'gb200', 'r3'))]);
    expect(next).toEqual({ types: { gb200: { count: 4, racks: { r1: 3, r3: 1 } } }, version: 4 });
    expect(current).toEqual(snapshot);
  });

  const current = (): Catalog => ({
    types: { gb200: { count: 3, racks: { r1: 2, r2: 1 } }, h100: { count: 1, racks: { r9: 1 } } },
    version: 2,
  });

  it.each([
    {
      name: 'move between racks of one type',
      change: moved(machine('a', 'gb200', 'r1'), 'gb200', 'r2'),
      types: { gb200: { count: 3, racks: { r1: 1, r2: 2 } }, h100: { count: 1, racks: { r9: 1 } } },
    },
    {
      name: 'move to a new rack; the emptied rack entry is removed',
      change: moved(machine('c', 'gb200', 'r2'), 'gb200', 'r7'),
      types: { gb200: { count: 3, racks: { r1: 2, r7: 1 } }, h100: { count: 1, racks: { r9: 1 } } },
    },
    {
      name: 'change of type',
      change: moved(machine('a', 'gb200', 'r1'), 'h100', 'r9'),
      types: { gb200: { count: 2, racks: { r1: 1, r2: 1 } }, h100: { count: 2, racks: { r9: 2 } } },
    },
    {
      name: 'the last machine of a type leaves: the type entry is removed',
      change: moved(machine('d', 'h100', 'r9'), 'gb200', 'r2'),
      types: { gb200: { count: 4, racks: { r1: 2, r2: 2 } } },
    },
  ])('$name', ({ change, types }) => {
    expect(catalogAfter(current(), [change])).toEqual({ types, version: 2 });
  });

  it.each([
    { name: 'no machines', machines: [] },
    {
      name: 're-registrations with the same type and rack (labels changed)',
      machines: [{ before: machine('a', 'gb200', 'r1'), after: { ...machine('a', 'gb200', 'r1'), labels: { x: 'y' } } }],
    },
  ])('null when nothing changed: $name', ({ machines }) => {
    expect(catalogAfter(current(), machines)).toBeNull();
  });

  it('a move and its reverse in one batch still report a (balanced) change', () => {
    const a = machine('a', 'gb200', 'r1');
    const next = catalogAfter(current(), [moved(a, 'gb200', 'r2'), moved({ ...a, rack: 'r2' }, 'gb200', 'r1')]);
    expect(next).toEqual(current());
  });
});

describe('rackPicker', () => {
  it('picks each rack in proportion to its machines', () => {
    const racks = { r1: 1, r2: 3, r3: 0, r4: 4 };
    // The draw falls in r1's eighth, r2's three eighths or r4's half; an empty rack is never picked.
    const at = (draw: number) => rackPicker(racks, () => draw)();
    expect([0, 0.12, 0.125, 0.49, 0.5, 0.99].map(at)).toEqual(['r1', 'r1', 'r2', 'r2', 'r4', 'r4']);
    expect(rackPicker({}, () => 0.5)()).toBeUndefined();
  });

  it('picks among a thousand racks as the counts say', () => {
    const racks = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`r${i}`, (i % 7) + 1]));
    const total = Object.values(racks).reduce((sum, n) => sum + n, 0);
    // A draw within a rack's first machine picks that rack; one within the machine before it, the rack before.
    const names = Object.keys(racks);
    let first = 0;
    for (const [i, [rack, count]] of Object.entries(racks).entries()) {
      expect(rackPicker(racks, () => (first + 0.5) / total)()).toBe(rack);
      if (i > 0) expect(rackPicker(racks, () => (first - 0.5) / total)()).toBe(names[i - 1]);
      first += count;
    }
  });
});
