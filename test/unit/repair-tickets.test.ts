import { describe, expect, it } from 'vitest';
import type { HistoryEntry } from '#domain/core/model.ts';
import { ticketOf } from '#domain/repair/repair-tickets.ts';

// A repair ticket told from a machine's history (domain/repair/repair-tickets.ts): pure, on hand-written histories.

const t = (minute: number) => `2026-11-27T10:${String(minute).padStart(2, '0')}:00.000Z`;
const issue = { category: 'HARDWARE' as const, summary: 'ECC errors' };
const report: HistoryEntry = { machineId: 'm-1', at: t(0), actor: 'acme-user', action: 'instance-released', instanceId: 'i-1', issue, reportingOrg: 'acme' };
const entry = (minute: number, action: string, extra: Partial<HistoryEntry> = {}): HistoryEntry => ({
  machineId: 'm-1',
  at: t(minute),
  actor: 'x',
  action,
  ...extra,
});
const event = (minute: number, type: string): HistoryEntry => entry(minute, 'event', { event: { type, detail: {} } });
const removed = (minute: number, source: string): HistoryEntry => entry(minute, 'health-override-removed', { changes: { healthOverride: { from: source } } });

const opened = [event(0, 'RepairRequested'), report, event(0, 'MachineQuarantined')];

describe('a repair ticket', () => {
  it('is open from the report, names it, and moves to in-repair when a repair tenant claims the machine', () => {
    expect(ticketOf(report, [...opened])).toEqual({
      id: 'm-1@2026-11-27T10:00:00.000Z',
      machineId: 'm-1',
      instanceId: 'i-1',
      category: 'HARDWARE',
      summary: 'ECC errors',
      state: 'open',
      openedAt: t(0),
      updatedAt: t(0),
    });
    expect(ticketOf(report, [...opened, entry(3, 'instance-created')])).toMatchObject({ state: 'in-repair', updatedAt: t(3) });
  });

  it('is resolved by a completed repair, or by the validation after it, whatever order one instant stored its entries in', () => {
    const completed = [removed(5, 'tenant-reported-issue'), event(5, 'RepairCompleted'), removed(5, 'repair-request')];
    expect(ticketOf(report, [...opened, entry(3, 'instance-created'), ...completed])).toMatchObject({
      state: 'resolved',
      action: 'repaired',
      closedAt: t(5),
    });
    const validating = [entry(5, 'validation-requested'), ...completed];
    expect(ticketOf(report, [...opened, ...validating])).toMatchObject({ state: 'in-repair', updatedAt: t(5) });
    expect(ticketOf(report, [...opened, ...validating, entry(7, 'validation-passed')])).toMatchObject({
      state: 'resolved',
      action: 'validated',
      closedAt: t(7),
    });
    expect(ticketOf(report, [...opened, ...validating, entry(7, 'validation-failed')])).toMatchObject({ state: 'in-repair', updatedAt: t(7) });
  });

  it('is unresolved when the repair failed, no-fault-found when the quarantine is lifted without repair, retired with its machine', () => {
    const unresolved = ticketOf(report, [...opened, entry(3, 'instance-created'), event(6, 'RepairFailed')]);
    expect(unresolved).toMatchObject({ state: 'unresolved', closedAt: t(6) });
    expect(unresolved.action).toBeUndefined();
    expect(ticketOf(report, [...opened, removed(4, 'tenant-reported-issue')])).toMatchObject({ state: 'resolved', action: 'no-fault-found' });
    expect(ticketOf(report, [...opened, entry(9, 'machine-retired')])).toMatchObject({ state: 'resolved', action: 'retired', closedAt: t(9) });
  });

  it('ends where it is resolved, or where the next report opens another ticket', () => {
    const next = { ...report, at: t(20), instanceId: 'i-2' };
    const history = [...opened, removed(4, 'tenant-reported-issue'), entry(10, 'instance-created'), next, entry(25, 'instance-created')];
    expect(ticketOf(report, history)).toMatchObject({ state: 'resolved', updatedAt: t(4) });
    expect(ticketOf(report, [...opened, next, entry(25, 'instance-created')])).toMatchObject({ state: 'open', updatedAt: t(0) });
  });
});
