import { describe, expect, it } from 'vitest';
import type { HistoryEntry, Machine } from '#domain/core/model.ts';
import { historyPage, machineView, registerMachine, registrationEntry, type MachineRegistration } from '#domain/machines/machines.ts';
import { addMs, iso } from '#domain/core/time.ts';
import { aMachine, aRepairRequest, NOW, T0 } from '#test/support/fixtures.ts';

const repairRequest = aRepairRequest();

const existing = (over: Partial<Machine> = {}): Machine =>
  aMachine({
    state: 'Assigned',
    instanceId: 'i-1',
    labels: { a: '1', b: '2' },
    healthOverrides: [repairRequest],
    lastHeartbeatAt: iso(T0),
    version: 8,
    ...over,
  });

describe('registerMachine', () => {
  it('a new machine: Ready, no overrides, not yet heard from, version 0, who registered it and as what on the record', () => {
    const change = registerMachine(null, { id: 'm-9', machineType: 'h100', rack: 'r3', labels: { pool: 'x' } }, 'ops', NOW);
    const created: Machine = {
      id: 'm-9',
      machineType: 'h100',
      rack: 'r3',
      state: 'Ready',
      labels: { pool: 'x' },
      healthOverrides: [],
      heartbeatLive: false,
      registered: { by: 'ops', machineType: 'h100', rack: 'r3' },
      version: 0,
      createdAt: iso(NOW),
      updatedAt: iso(NOW),
    };
    expect(change).toEqual({ machines: [{ before: null, after: created }], history: [] });
    expect(registrationEntry(created)).toEqual({
      machineId: 'm-9',
      at: iso(NOW),
      actor: 'ops',
      action: 'machine-registered',
      changes: { machineType: { to: 'h100' }, rack: { to: 'r3' } },
    });
  });

  it('an NVLink domain is kept from registration, kept when omitted, and a change of it is recorded', () => {
    const created = registerMachine(null, { id: 'm-9', machineType: 'gb200', rack: 'r1', nvlinkDomain: 'nvl-1' }, 'ops', NOW)!.machines![0]!.after;
    expect(created).toMatchObject({ nvlinkDomain: 'nvl-1', registered: { by: 'ops', machineType: 'gb200', rack: 'r1', nvlinkDomain: 'nvl-1' } });
    expect(registerMachine(created, { id: 'm-9', machineType: 'gb200', rack: 'r1' }, 'ops', NOW)).toBeNull();
    const moved = registerMachine(created, { id: 'm-9', machineType: 'gb200', rack: 'r1', nvlinkDomain: 'nvl-2' }, 'ops', NOW)!;
    expect(moved.machines![0]!.after.nvlinkDomain).toBe('nvl-2');
    expect(moved.history[0]!.changes).toMatchObject({ nvlinkDomain: { from: 'nvl-1', to: 'nvl-2' } });
  });

  it('a new machine without rack or labels goes to rack "default" with no labels', () => {
    const after = registerMachine(null, { id: 'm-9', machineType: 'h100' }, 'ops', NOW)!.machines![0]!.after;
    expect(after.rack).toBe('default');
    expect(after.labels).toEqual({});
  });

  it.each<{ name: string; reg: Omit<MachineRegistration, 'id'> }>([
    { name: 'same type, rack and labels', reg: { machineType: 'gb200', rack: 'r1', labels: { a: '1' } } },
    { name: 'rack omitted keeps the rack', reg: { machineType: 'gb200' } },
    { name: 'labels in another order', reg: { machineType: 'gb200', rack: 'r1', labels: { b: '2', a: '1' } } },
  ])('unchanged → null: $name', ({ reg }) => {
    expect(registerMachine(existing(), { id: 'm-1', ...reg }, 'ops', NOW)).toBeNull();
  });

  it.each([
    { name: 'type changed', reg: { machineType: 'h100' }, expected: { machineType: 'h100', rack: 'r1', labels: { a: '1', b: '2' } } },
    { name: 'rack changed', reg: { machineType: 'gb200', rack: 'r2' }, expected: { machineType: 'gb200', rack: 'r2', labels: { a: '1', b: '2' } } },
    {
      name: 'labels merged over the existing ones',
      reg: { machineType: 'gb200', labels: { b: '3', c: '4' } },
      expected: { machineType: 'gb200', rack: 'r1', labels: { a: '1', b: '3', c: '4' } },
    },
  ])('updated: $name, state, instance, overrides and heartbeat untouched', ({ reg, expected }) => {
    const before = existing();
    const change = registerMachine(before, { id: 'm-1', ...reg }, 'ops', NOW);
    expect(change!.machines).toEqual([{ before, after: { ...before, ...expected, updatedAt: iso(NOW) } }]);
    const after = change!.machines![0]!.after;
    expect(after).toMatchObject({
      state: 'Assigned',
      instanceId: 'i-1',
      healthOverrides: [repairRequest],
      heartbeatLive: true,
      lastHeartbeatAt: iso(T0),
      version: 8,
      createdAt: iso(T0),
    });
    expect(change!.history).toEqual([
      {
        machineId: 'm-1',
        at: iso(NOW),
        actor: 'ops',
        action: 'machine-updated',
        changes: { machineType: { from: 'gb200', to: expected.machineType }, rack: { from: 'r1', to: expected.rack } },
      },
    ]);
  });
});

describe('historyPage', () => {
  const registered = existing({ registered: { by: 'ops', machineType: 'gb200', rack: 'r1' } });
  const stored: HistoryEntry[] = [{ machineId: 'm-1', at: iso(NOW), actor: 'alice', action: 'instance-created' }];

  it('the registration entry follows the stored ones on the last page', () => {
    expect(historyPage(registered, { items: stored, nextToken: undefined })).toEqual({
      items: [...stored, registrationEntry(registered)],
      nextToken: undefined,
    });
  });

  it('a page with more to come, or a machine registered before the record kept it, has only the stored entries', () => {
    expect(historyPage(registered, { items: stored, nextToken: 'more' })).toEqual({ items: stored, nextToken: 'more' });
    expect(historyPage(existing(), { items: stored, nextToken: undefined })).toEqual({ items: stored, nextToken: undefined });
  });
});

describe('machineView', () => {
  const view = { rosterSeenAt: iso(T0), timeoutMs: 30_000 };

  it('an allocatable machine', () => {
    const m = existing({ state: 'Ready', instanceId: undefined, healthOverrides: [], lastHeartbeatAt: undefined });
    expect(machineView(m, view, addMs(T0, 1_000))).toEqual({
      id: 'm-1',
      machineType: 'gb200',
      rack: 'r1',
      state: 'Ready',
      labels: { a: '1', b: '2' },
      healthOverrides: [],
      allocatable: true,
      notAllocatableReasons: [],
      lastHeartbeatAt: iso(T0),
      lifecycle: 'available',
      version: 8,
    });
  });

  it('an assigned, overridden machine with a cleanup history shows why it is not allocatable', () => {
    const m = existing({
      state: 'Cleanup',
      heartbeatLive: false,
      lastHeartbeatAt: iso(addMs(T0, -5_000)),
      cleanup: { instanceId: 'i-1', phase: 'failed', attempts: 2, leaseUntil: iso(NOW), error: 'GPU stuck' },
    });
    const shown = machineView(m, view, NOW);
    expect(shown).toEqual({
      id: 'm-1',
      machineType: 'gb200',
      rack: 'r1',
      state: 'Cleanup',
      instanceId: 'i-1',
      labels: { a: '1', b: '2' },
      healthOverrides: [repairRequest],
      allocatable: false,
      notAllocatableReasons: ['state:Cleanup', 'assigned', 'cleanup-failed', 'health-override:repair-request', 'heartbeat-stale'],
      lastHeartbeatAt: iso(addMs(T0, -5_000)),
      cleanup: { phase: 'failed', attempts: 2, error: 'GPU stuck' },
      lifecycle: 'cleanup',
      version: 8,
    });
  });

  it('never shows internal fields; no lastHeartbeatAt when never seen', () => {
    const shown = machineView(
      existing({ heartbeatLive: false, lastHeartbeatAt: undefined, registered: { by: 'ops', machineType: 'gb200', rack: 'r1' } }),
      view,
      NOW,
    );
    for (const hidden of ['heartbeatLive', 'createdAt', 'updatedAt', 'lastHeartbeatAt', 'registered']) expect(shown).not.toHaveProperty(hidden);
  });
});
