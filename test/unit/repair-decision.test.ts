import { describe, expect, it } from 'vitest';
import type { Issue, Machine } from '#domain/core/model.ts';
import { buildOverride } from '#domain/core/overrides.ts';
import { applyOverrideEdits, releaseOverrideEdits, repairClaimBlockers, type ReleaseReport } from '#domain/repair/repair.ts';
import { aMachine } from '#test/support/fixtures.ts';

const at = '2026-11-22T10:00:00.000Z';
const now = new Date(at);
const issue: Issue = { category: 'HARDWARE', summary: 'ECC errors', details: 'DIMM 2' };

function machine(sources: string[], labels: Record<string, string> = {}): Machine {
  return aMachine({
    rack: 'rack-1',
    state: 'Assigned',
    instanceId: 'i-1',
    labels,
    healthOverrides: sources.map((source) => buildOverride('m-1', { template: source === 'repair-request' ? 'request-repair' : source, issue }, 'someone', at)),
    lastHeartbeatAt: at,
    version: 3,
    createdAt: at,
    updatedAt: at,
  });
}

const report = (overrides: Partial<ReleaseReport> = {}): ReleaseReport => ({
  actor: 'tenant',
  isRepairTenant: false,
  policy: { kind: 'request' },
  ...overrides,
});

/** The outcome as the sorted set of sources left on the machine, plus the tenant-reported issue kept. */
function outcome(m: Machine, r: ReleaseReport) {
  const edits = releaseOverrideEdits(m, r, at);
  const { overrides } = applyOverrideEdits(m, edits, r.actor, at);
  return {
    sources: overrides.map((o) => o.source).sort(),
    reported: overrides.find((o) => o.source === 'tenant-reported-issue')?.issue,
    events: edits.events,
  };
}

const incomplete = (status: string) => ({
  category: 'OTHER',
  summary: 'RepairSystem processing incomplete',
  details: `Machine released by repair tenant but repair status is: ${status}`,
});

describe('release decision table: regular tenant', () => {
  it.each([
    ['issue, auto-repair on', report({ issue }), ['repair-request', 'tenant-reported-issue'], issue, ['MachineQuarantined', 'RepairRequested']],
    ['issue, auto-repair off', report({ issue, policy: { kind: 'off' } }), ['tenant-reported-issue'], issue, ['MachineQuarantined']],
    [
      'issue, held back by a tripped breaker',
      report({ issue, policy: { kind: 'hold-back', trips: false } }),
      ['tenant-reported-issue'],
      issue,
      ['MachineQuarantined'],
    ],
    [
      'issue that trips the breaker',
      report({ issue, policy: { kind: 'hold-back', trips: true } }),
      ['tenant-reported-issue'],
      issue,
      ['MachineQuarantined', 'RepairStormDetected'],
    ],
    [
      'issue on a machine that keeps coming back',
      report({ issue, policy: { kind: 'escalate', earlierReports: [] } }),
      ['out-for-repair', 'tenant-reported-issue'],
      issue,
      ['MachineQuarantined', 'RepairEscalated'],
    ],
    ['no issue', report(), [], undefined, []],
  ])('%s', (_name, r, sources, reported, events) => {
    expect(outcome(machine([]), r)).toEqual({ sources, reported, events });
  });
});

describe('release decision table: repair tenant', () => {
  const repairTenant = (extra: Partial<ReleaseReport> = {}) => report({ isRepairTenant: true, ...extra });
  const newIssue: Issue = { category: 'PERFORMANCE', summary: 'still slow' };

  it.each([
    ['Completed, no issue', { repair_status: 'Completed' }, repairTenant(), [], undefined, ['RepairCompleted']],
    ['completed in lower case', { repair_status: 'completed' }, repairTenant(), [], undefined, ['RepairCompleted']],
    [' COMPLETED  with spaces', { repair_status: ' COMPLETED ' }, repairTenant(), [], undefined, ['RepairCompleted']],
    [
      'Completed with a new issue',
      { repair_status: 'Completed' },
      repairTenant({ issue: newIssue }),
      ['tenant-reported-issue'],
      newIssue,
      ['RepairCompleted', 'MachineQuarantined'],
    ],
    ['Failed, no issue', { repair_status: 'Failed' }, repairTenant(), ['tenant-reported-issue'], incomplete('Failed'), ['RepairFailed']],
    ['Failed with an issue', { repair_status: 'Failed' }, repairTenant({ issue: newIssue }), ['tenant-reported-issue'], newIssue, ['RepairFailed']],
    ['InProgress', { repair_status: 'InProgress' }, repairTenant(), ['tenant-reported-issue'], incomplete('InProgress'), ['RepairFailed']],
    ['in_progress', { repair_status: 'in_progress' }, repairTenant(), ['tenant-reported-issue'], incomplete('in_progress'), ['RepairFailed']],
    ['missing status', {}, repairTenant(), ['tenant-reported-issue'], incomplete('Unknown'), ['RepairFailed']],
    ['unknown status', { repair_status: 'Done-ish' }, repairTenant(), ['tenant-reported-issue'], incomplete('Done-ish'), ['RepairFailed']],
  ])('repair-request present, %s', (_name, labels, r, sources, reported, events) => {
    expect(outcome(machine(['tenant-reported-issue', 'repair-request'], labels), r)).toEqual({ sources, reported, events });
  });

  it('never applies repair-request, even with auto-repair on and a new issue (no loops)', () => {
    for (const labels of [{ repair_status: 'Completed' }, { repair_status: 'Failed' }, {}] as Record<string, string>[]) {
      for (const start of [['tenant-reported-issue', 'repair-request'], ['tenant-reported-issue'], []]) {
        const edits = releaseOverrideEdits(machine(start, labels), repairTenant({ issue: newIssue, policy: { kind: 'request' } }), at);
        expect(edits.add.map((o) => o.source)).not.toContain('repair-request');
      }
    }
  });

  it('repair-request absent: an issue applies tenant-reported-issue, no issue clears nothing', () => {
    expect(outcome(machine(['tenant-reported-issue'], { repair_status: 'Completed' }), repairTenant())).toEqual({
      sources: ['tenant-reported-issue'],
      reported: issue,
      events: [],
    });
    expect(outcome(machine([], {}), repairTenant({ issue: newIssue }))).toEqual({
      sources: ['tenant-reported-issue'],
      reported: newIssue,
      events: ['MachineQuarantined'],
    });
  });

  it('keeps overrides it does not own', () => {
    expect(outcome(machine(['tenant-reported-issue', 'repair-request', 'degraded'], { repair_status: 'Completed' }), repairTenant()).sources).toEqual([
      'degraded',
    ]);
  });
});

describe('who may claim a machine for repair', () => {
  const heartbeat = { rosterSeenAt: at, timeoutMs: 30_000 };
  const ready = (sources: string[]) => ({ ...machine(sources), state: 'Ready' as const, instanceId: undefined });

  it('admits a repair tenant past its own quarantine only', () => {
    expect(repairClaimBlockers(ready(['tenant-reported-issue', 'repair-request']), heartbeat, now)).toEqual([]);
    expect(repairClaimBlockers(ready(['tenant-reported-issue', 'repair-request', 'out-for-repair']), heartbeat, now)).toEqual([
      'health-override:out-for-repair',
    ]);
    expect(repairClaimBlockers(ready([]), heartbeat, now)).toEqual(['no-repair-request']);
    expect(repairClaimBlockers({ ...ready(['repair-request']), heartbeatLive: false, lastHeartbeatAt: '2026-11-22T09:00:00.000Z' }, heartbeat, now)).toEqual([
      'heartbeat-stale',
    ]);
    expect(repairClaimBlockers(machine(['repair-request']), heartbeat, now)).toEqual(['state:Assigned', 'assigned']);
  });
});
