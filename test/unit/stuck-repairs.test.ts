import { describe, expect, it } from 'vitest';
import type { Machine } from '#domain/core/model.ts';
import { buildOverride } from '#domain/core/overrides.ts';
import { needsStuckAlert, repairStage, watchRepair, type RepairSla } from '#domain/repair/stuck-repairs.ts';
import { aMachine } from '#test/support/fixtures.ts';

// Stuck repairs: a repair request nobody claims within claim_minutes, or a claimed repair past
// its repair_eta label or repair_hours. Pure, with injected dates.

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const requestedAt = new Date('2026-11-22T10:00:00.000Z');
const sinceRequest = (ms: number) => new Date(requestedAt.getTime() + ms);
const sla: RepairSla = { claimMs: 60 * MINUTE, repairMs: 24 * HOUR };

/** A machine quarantined with a repair request at `requestedAt`; `claimedAt` puts a repair tenant's instance on it. */
function machine(options: { claimedAt?: Date; eta?: string; stuckAlerted?: string; request?: boolean } = {}): Machine {
  const at = requestedAt.toISOString();
  const reported = buildOverride('m-1', { template: 'tenant-reported-issue', issue: { category: 'HARDWARE', summary: 'ECC' } }, 'acme-user', at);
  const request = buildOverride('m-1', { template: 'request-repair', message: 'Automated repair' }, 'acme-user', at);
  return aMachine({
    rack: 'rack-1',
    state: options.claimedAt ? 'Assigned' : 'Ready',
    ...(options.claimedAt ? { instanceId: 'i-repair', assignedAt: options.claimedAt.toISOString() } : {}),
    labels: options.eta !== undefined ? { repair_eta: options.eta } : {},
    healthOverrides: options.request === false ? [reported] : [reported, request],
    ...(options.stuckAlerted ? { stuckAlerted: options.stuckAlerted } : {}),
    version: 1,
    createdAt: at,
    updatedAt: at,
  });
}

describe('repairStage', () => {
  it('no repair request: not watched at all', () => {
    expect(repairStage(machine({ request: false }))).toBeNull();
    expect(watchRepair(machine({ request: false }), sinceRequest(100 * HOUR), sla)).toBeNull();
  });

  it('a request nobody claimed is unclaimed since the request', () => {
    expect(repairStage(machine())).toEqual({ stage: 'unclaimed', since: requestedAt.toISOString() });
  });

  it("the reporting tenant's instance still on the machine (assigned before the request) does not count as a claim", () => {
    const m = { ...machine(), state: 'Cleanup' as const, instanceId: 'i-tenant', assignedAt: new Date(requestedAt.getTime() - HOUR).toISOString() };
    expect(repairStage(m)).toEqual({ stage: 'unclaimed', since: requestedAt.toISOString() });
  });

  it('a claim after the request is in-repair since the claim', () => {
    expect(repairStage(machine({ claimedAt: sinceRequest(10 * MINUTE) }))).toEqual({ stage: 'in-repair', since: sinceRequest(10 * MINUTE).toISOString() });
  });
});

describe('watchRepair: unclaimed against claim_minutes', () => {
  it('just below the claim SLA (59 min): not stuck, waiting 59 minutes', () => {
    expect(watchRepair(machine(), sinceRequest(59 * MINUTE), sla)).toMatchObject({ stage: 'unclaimed', stuck: false, waitingMinutes: 59 });
  });

  it('exactly at the claim SLA (60 min): not stuck yet', () => {
    const watch = watchRepair(machine(), sinceRequest(60 * MINUTE), sla);
    expect(watch).toMatchObject({ stuck: false, waitingMinutes: 60, deadline: sinceRequest(60 * MINUTE).toISOString() });
  });

  it('just past the claim SLA (60 min + 1 ms): stuck', () => {
    expect(watchRepair(machine(), sinceRequest(60 * MINUTE + 1), sla)).toMatchObject({ stage: 'unclaimed', stuck: true, waitingMinutes: 60 });
  });

  it('61 minutes: stuck, with machine, since and deadline', () => {
    expect(watchRepair(machine(), sinceRequest(61 * MINUTE), sla)).toEqual({
      machineId: 'm-1',
      stage: 'unclaimed',
      since: requestedAt.toISOString(),
      waitingMinutes: 61,
      deadline: sinceRequest(60 * MINUTE).toISOString(),
      stuck: true,
      episode: `unclaimed#${requestedAt.toISOString()}`,
    });
  });

  it('repair_eta does not apply before the claim', () => {
    expect(watchRepair(machine({ eta: sinceRequest(-HOUR).toISOString() }), sinceRequest(30 * MINUTE), sla)).toMatchObject({
      stage: 'unclaimed',
      stuck: false,
    });
  });

  it('a clock behind the request reports 0 minutes waited, not a negative number', () => {
    expect(watchRepair(machine(), sinceRequest(-5 * MINUTE), sla)).toMatchObject({ waitingMinutes: 0, stuck: false });
  });
});

describe('watchRepair: in repair against repair_hours and repair_eta', () => {
  const claimedAt = sinceRequest(30 * MINUTE);
  const sinceClaim = (ms: number) => new Date(claimedAt.getTime() + ms);

  it('the claim clock, not the request clock: 2 hours after the request but 90 min after the claim is fine', () => {
    expect(watchRepair(machine({ claimedAt }), sinceRequest(2 * HOUR), sla)).toMatchObject({ stage: 'in-repair', stuck: false, waitingMinutes: 90 });
  });

  it('below (23 h 59 min), at (24 h) and just above (24 h + 1 ms) the repair SLA', () => {
    expect(watchRepair(machine({ claimedAt }), sinceClaim(24 * HOUR - MINUTE), sla)?.stuck).toBe(false);
    expect(watchRepair(machine({ claimedAt }), sinceClaim(24 * HOUR), sla)).toMatchObject({ stuck: false, deadline: sinceClaim(24 * HOUR).toISOString() });
    expect(watchRepair(machine({ claimedAt }), sinceClaim(24 * HOUR + 1), sla)).toMatchObject({ stage: 'in-repair', stuck: true, waitingMinutes: 24 * 60 });
  });

  it('a repair_eta earlier than the SLA wins: below, at and just past the eta', () => {
    const eta = sinceClaim(2 * HOUR);
    const m = machine({ claimedAt, eta: eta.toISOString() });
    expect(watchRepair(m, sinceClaim(2 * HOUR - 1), sla)).toMatchObject({ stuck: false, deadline: eta.toISOString() });
    expect(watchRepair(m, eta, sla)?.stuck).toBe(false);
    expect(watchRepair(m, sinceClaim(2 * HOUR + 1), sla)).toMatchObject({ stage: 'in-repair', stuck: true, waitingMinutes: 120 });
  });

  it('a repair_eta already past when claimed makes the repair stuck at once', () => {
    const m = machine({ claimedAt, eta: sinceRequest(-HOUR).toISOString() });
    expect(watchRepair(m, sinceClaim(1), sla)).toMatchObject({ stuck: true, deadline: sinceRequest(-HOUR).toISOString() });
  });

  it('a repair_eta later than the SLA does not extend it', () => {
    const m = machine({ claimedAt, eta: sinceClaim(48 * HOUR).toISOString() });
    expect(watchRepair(m, sinceClaim(24 * HOUR + 1), sla)).toMatchObject({ stuck: true, deadline: sinceClaim(24 * HOUR).toISOString() });
  });

  // Numbers are what a repair tool might mean as hours; V8's lenient Date.parse would read "2" as 2001-02-01.
  it.each(['', 'soon', 'tomorrow', '4h', '2026-13-45T99:00:00Z', '1', '2', '12', '48', 'NaN'])(
    'an invalid repair_eta %j is ignored: the SLA applies',
    (eta) => {
      const m = machine({ claimedAt, eta });
      const before = watchRepair(m, sinceClaim(24 * HOUR), sla);
      expect(before).toMatchObject({ stuck: false, deadline: sinceClaim(24 * HOUR).toISOString() });
      expect(watchRepair(m, sinceClaim(24 * HOUR + 1), sla)?.stuck).toBe(true);
    },
  );
});

describe('episodes and needsStuckAlert', () => {
  it('a stuck, never-alerted repair needs an alert; the same episode once alerted does not', () => {
    const now = sinceRequest(61 * MINUTE);
    const watch = watchRepair(machine(), now, sla);
    expect(needsStuckAlert(machine(), watch)).toBe(true);
    const alerted = machine({ stuckAlerted: watch!.episode });
    expect(needsStuckAlert(alerted, watchRepair(alerted, now, sla))).toBe(false);
    // Still stuck hours later: the same episode, no second alert.
    expect(needsStuckAlert(alerted, watchRepair(alerted, sinceRequest(10 * HOUR), sla))).toBe(false);
  });

  it('not stuck, or no request: no alert', () => {
    expect(needsStuckAlert(machine(), watchRepair(machine(), sinceRequest(59 * MINUTE), sla))).toBe(false);
    expect(needsStuckAlert(machine({ request: false }), null)).toBe(false);
  });

  it('the claim starts a new episode: an alerted unclaimed request that is claimed and then overruns is alerted again', () => {
    const unclaimed = watchRepair(machine(), sinceRequest(61 * MINUTE), sla)!;
    const claimedAt = sinceRequest(2 * HOUR);
    const claimed = machine({ claimedAt, stuckAlerted: unclaimed.episode });
    const inRepair = watchRepair(claimed, new Date(claimedAt.getTime() + 24 * HOUR + 1), sla)!;
    expect(inRepair.episode).not.toBe(unclaimed.episode);
    expect(inRepair.episode).toBe(`in-repair#${claimedAt.toISOString()}`);
    expect(needsStuckAlert(claimed, inRepair)).toBe(true);
  });

  it('a second claim (the first repair tenant gave up, another took over) is another episode', () => {
    const first = watchRepair(machine({ claimedAt: sinceRequest(HOUR) }), sinceRequest(30 * HOUR), sla)!;
    const secondMachine = machine({ claimedAt: sinceRequest(26 * HOUR), stuckAlerted: first.episode });
    const second = watchRepair(secondMachine, sinceRequest(51 * HOUR), sla)!;
    expect(second.episode).not.toBe(first.episode);
    expect(needsStuckAlert(secondMachine, second)).toBe(true);
  });
});
