import { describe, expect, it } from 'vitest';
import {
  aggregateClassifications,
  allocatability,
  effectiveOverrides,
  heartbeatStale,
  inAllocatableIndex,
  lastSeenAt,
  preventingSources,
  type HeartbeatView,
} from '#domain/core/health.ts';
import type { Classification, HealthOverride, Machine } from '#domain/core/model.ts';
import { addMs, iso } from '#domain/core/time.ts';
import { aMachine, T0 } from '#test/support/fixtures.ts';

const TIMEOUT_MS = 30_000;

const machine = (over: Partial<Machine> = {}): Machine => aMachine({ version: 4, ...over });

function override(source: string, mode: 'merge' | 'replace', ...alerts: Classification[][]): HealthOverride {
  return {
    source,
    mode,
    alerts: alerts.map((classifications, i) => ({ id: `${source}-${i}`, target: 'm-1', message: source, classifications })),
    createdBy: 'ops',
    createdAt: iso(T0),
  };
}

/** A roster stored at T0 and a machine in it: fresh until T0 + timeout. */
const freshView: HeartbeatView = { rosterSeenAt: iso(T0), timeoutMs: TIMEOUT_MS };

describe('effectiveOverrides', () => {
  const a = override('a', 'merge', ['PreventAllocations']);
  const b = override('b', 'merge', ['SuppressExternalAlerting']);
  const r1 = override('r1', 'replace');
  const r2 = override('r2', 'replace', ['SuppressExternalAlerting']);

  it.each([
    { name: 'no overrides', input: [], expected: [] },
    { name: 'only merges: all of them, in order', input: [a, b], expected: [a, b] },
    { name: 'a replace wins over merges before it', input: [a, r1], expected: [r1] },
    { name: 'a replace wins over merges after it', input: [r1, a, b], expected: [r1] },
    { name: 'of several replaces, the last one', input: [r1, a, r2, b], expected: [r2] },
    { name: 'of several replaces, the last one (other order)', input: [r2, r1], expected: [r1] },
  ])('$name', ({ input, expected }) => {
    expect(effectiveOverrides(input)).toEqual(expected);
  });
});

describe('aggregateClassifications', () => {
  it.each([
    { name: 'nothing', input: [], expected: [] },
    {
      name: 'merges union every alert of every override',
      input: [
        override('a', 'merge', ['PreventAllocations'], ['SuppressExternalAlerting']),
        override('b', 'merge', ['PreventInstanceDeletion', 'PreventAllocations']),
      ],
      expected: ['PreventAllocations', 'SuppressExternalAlerting', 'PreventInstanceDeletion'],
    },
    {
      name: 'a replace without alerts (mark-healthy) clears everything',
      input: [override('a', 'merge', ['PreventAllocations']), override('healthy', 'replace')],
      expected: [],
    },
    {
      name: 'a replace is the whole aggregate',
      input: [override('a', 'merge', ['PreventAllocations']), override('r', 'replace', ['SuppressExternalAlerting'])],
      expected: ['SuppressExternalAlerting'],
    },
  ])('$name', ({ input, expected }) => {
    expect([...aggregateClassifications(input)].sort()).toEqual([...expected].sort());
  });
});

describe('preventingSources', () => {
  it.each([
    { name: 'none', input: [], expected: [] },
    {
      name: 'merges that prevent allocation, not the others',
      input: [
        override('repair-request', 'merge', ['PreventAllocations', 'SuppressExternalAlerting']),
        override('request-online-repair', 'merge', ['PreventInstanceDeletion']),
        override('degraded', 'merge', ['SuppressExternalAlerting'], ['PreventAllocations']),
      ],
      expected: ['repair-request', 'degraded'],
    },
    {
      name: 'a replace without PreventAllocations hides preventing merges',
      input: [override('repair-request', 'merge', ['PreventAllocations']), override('mark-healthy', 'replace')],
      expected: [],
    },
    {
      name: 'a preventing replace is the only source',
      input: [override('repair-request', 'merge', ['PreventAllocations']), override('out-for-repair', 'replace', ['PreventAllocations'])],
      expected: ['out-for-repair'],
    },
  ])('$name', ({ input, expected }) => {
    expect(preventingSources(input)).toEqual(expected);
  });
});

describe('lastSeenAt', () => {
  it.each([
    { name: 'live: the roster time', m: { heartbeatLive: true }, view: freshView, expected: iso(T0) },
    {
      name: 'live: its own later time when it resumed after the roster was stored',
      m: { heartbeatLive: true, lastHeartbeatAt: iso(addMs(T0, 5_000)) },
      view: freshView,
      expected: iso(addMs(T0, 5_000)),
    },
    {
      name: 'live: the roster time when it is later than its own',
      m: { heartbeatLive: true, lastHeartbeatAt: iso(addMs(T0, -5_000)) },
      view: freshView,
      expected: iso(T0),
    },
    {
      name: 'not live: its own last time, whatever the roster says',
      m: { heartbeatLive: false, lastHeartbeatAt: iso(addMs(T0, -60_000)) },
      view: freshView,
      expected: iso(addMs(T0, -60_000)),
    },
    { name: 'never seen', m: { heartbeatLive: false }, view: freshView, expected: undefined },
    { name: 'live but no roster stored', m: { heartbeatLive: true }, view: { timeoutMs: TIMEOUT_MS }, expected: undefined },
  ])('$name', ({ m, view, expected }) => {
    expect(lastSeenAt(machine(m), view)).toBe(expected);
  });
});

describe('allocatability', () => {
  it.each([
    { name: 'Ready, free, healthy, fresh', m: {}, reasons: [] },
    { name: 'Assigned with an instance', m: { state: 'Assigned', instanceId: 'i-1' }, reasons: ['state:Assigned', 'assigned'] },
    {
      name: 'in Cleanup',
      m: { state: 'Cleanup', instanceId: 'i-1', cleanup: { instanceId: 'i-1', phase: 'pending', attempts: 0 } },
      reasons: ['state:Cleanup', 'assigned'],
    },
    {
      name: 'cleanup failed',
      m: { state: 'Cleanup', instanceId: 'i-1', cleanup: { instanceId: 'i-1', phase: 'failed', attempts: 1, error: 'disk' } },
      reasons: ['state:Cleanup', 'assigned', 'cleanup-failed'],
    },
    { name: 'Ready but still holding an instance id', m: { instanceId: 'i-9' }, reasons: ['assigned'] },
    {
      name: 'each preventing override source is a reason',
      m: {
        healthOverrides: [
          override('repair-request', 'merge', ['PreventAllocations']),
          override('request-online-repair', 'merge', ['PreventInstanceDeletion']),
          override('degraded', 'merge', ['PreventAllocations']),
        ],
      },
      reasons: ['health-override:repair-request', 'health-override:degraded'],
    },
    {
      name: 'mark-healthy (replace) makes it allocatable again',
      m: { healthOverrides: [override('repair-request', 'merge', ['PreventAllocations']), override('mark-healthy', 'replace')] },
      reasons: [],
    },
    { name: 'never heard from', m: { heartbeatLive: false }, reasons: ['heartbeat-stale'] },
  ] satisfies Array<{ name: string; m: Partial<Machine>; reasons: string[] }>)('$name', ({ m, reasons }) => {
    const result = allocatability(machine(m), freshView, addMs(T0, 1_000));
    expect(result).toEqual({ allocatable: reasons.length === 0, notAllocatableReasons: reasons });
  });

  describe('heartbeat timeout boundary', () => {
    // Not in the roster any more; last seen at T0.
    const gone = machine({ heartbeatLive: false, lastHeartbeatAt: iso(T0) });
    const view: HeartbeatView = { rosterSeenAt: iso(addMs(T0, 60_000)), timeoutMs: TIMEOUT_MS };

    it.each([
      { name: 'well within the timeout', at: 1_000, stale: false },
      { name: 'exactly at the timeout', at: TIMEOUT_MS, stale: false },
      { name: 'one millisecond past the timeout', at: TIMEOUT_MS + 1, stale: true },
    ])('$name', ({ at, stale }) => {
      const now = addMs(T0, at);
      expect(heartbeatStale(gone, view, now)).toBe(stale);
      expect(allocatability(gone, view, now)).toEqual({ allocatable: !stale, notAllocatableReasons: stale ? ['heartbeat-stale'] : [] });
    });

    it('a live machine is judged by the stored roster time', () => {
      const live = machine({ heartbeatLive: true });
      expect(allocatability(live, freshView, addMs(T0, TIMEOUT_MS)).allocatable).toBe(true);
      expect(allocatability(live, freshView, addMs(T0, TIMEOUT_MS + 1)).notAllocatableReasons).toEqual(['heartbeat-stale']);
    });

    it('heartbeat-stale comes after the standing reasons', () => {
      const m = machine({ heartbeatLive: false, state: 'Assigned', instanceId: 'i-1' });
      expect(allocatability(m, freshView, T0).notAllocatableReasons).toEqual(['state:Assigned', 'assigned', 'heartbeat-stale']);
    });
  });
});

describe('inAllocatableIndex', () => {
  it.each([
    { name: 'an allocatable machine', m: {}, expected: true },
    { name: 'stale heartbeat does not matter', m: { heartbeatLive: false, lastHeartbeatAt: iso(addMs(T0, -3_600_000)) }, expected: true },
    { name: 'never heard from does not matter', m: { heartbeatLive: false }, expected: true },
    { name: 'Assigned', m: { state: 'Assigned', instanceId: 'i-1' }, expected: false },
    { name: 'Cleanup', m: { state: 'Cleanup', instanceId: 'i-1', cleanup: { instanceId: 'i-1', phase: 'pending', attempts: 0 } }, expected: false },
    { name: 'holding an instance id', m: { instanceId: 'i-1' }, expected: false },
    { name: 'preventing override', m: { healthOverrides: [override('repair-request', 'merge', ['PreventAllocations'])] }, expected: false },
    { name: 'non-preventing override', m: { healthOverrides: [override('request-online-repair', 'merge', ['PreventInstanceDeletion'])] }, expected: true },
  ] satisfies Array<{ name: string; m: Partial<Machine>; expected: boolean }>)('$name', ({ m, expected }) => {
    const subject = machine(m);
    expect(inAllocatableIndex(subject)).toBe(expected);
    // The index agrees with allocatability whenever the heartbeat is fresh.
    expect(allocatability({ ...subject, heartbeatLive: true }, freshView, T0).allocatable).toBe(expected);
  });
});
