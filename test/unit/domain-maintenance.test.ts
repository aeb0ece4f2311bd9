import { describe, expect, it } from 'vitest';
import type { Change } from '#domain/core/change.ts';
import { allocatability } from '#domain/core/health.ts';
import {
  cancelMaintenance,
  declareMaintenance,
  decideDeferral,
  requestDeferral,
  resolveScope,
  resumeMaintenance,
  type DeclareRequest,
  type Maintenance,
  type MaintenanceRules,
} from '#domain/maintenance/maintenance.ts';
import { nextDueAt, resyncAt, resyncStep, timeStep } from '#domain/maintenance/maintenance-deadlines.ts';
import { fanOutStep, handedBack, unwindStep } from '#domain/maintenance/maintenance-fan-out.ts';
import {
  admissible,
  admit,
  FAN_OUT_CHUNK,
  maintenanceIdOf,
  MAINTENANCE_SOURCE,
  reportWork,
  settleStarts,
  unansweredStarts,
  validationSettled,
} from '#domain/maintenance/maintenance-waves.ts';
import type { Instance, Machine } from '#domain/core/model.ts';
import { Rejection } from '#domain/core/rejection.ts';
import { addMs, iso } from '#domain/core/time.ts';
import { aMachine, anInstance, T0 } from '#test/support/fixtures.ts';

const RULES: MaintenanceRules = { minHandBackDays: 14, emergencyMinHandBackMinutes: 15, noticeHours: 24, resyncSeconds: 300 };
const DAY = 86_400_000;
const inDays = (days: number) => iso(addMs(T0, days * DAY));

const request = (over: Partial<DeclareRequest> = {}): DeclareRequest => ({
  kind: 'planned',
  category: 'firmware',
  reason: 'BMC firmware 2.4',
  scope: { machineIds: ['m-1', 'm-2'] },
  handBackBy: inDays(14),
  windowMinutes: 240,
  ...over,
});
const declare = (over: Partial<DeclareRequest> = {}, ids = ['m-1', 'm-2'], open: Maintenance[] = []) =>
  declareMaintenance('mnt-1', request(over), ids, open, 'ops', T0, RULES);

const rejection = (run: () => unknown): Rejection => {
  try {
    run();
  } catch (error) {
    if (error instanceof Rejection) return error;
    throw error;
  }
  throw new Error('expected a rejection');
};

const events = (change: Change | null) => (change?.history ?? []).flatMap((h) => (h.event ? [h.event.type] : []));
const stepped = (change: Change | null): Maintenance => change!.maintenances![0]!.after;

/** m-1 held by acme's i-1, m-2 free. */
const machines = () =>
  new Map<string, Machine>([
    ['m-1', aMachine({ id: 'm-1', state: 'Assigned', instanceId: 'i-1' })],
    ['m-2', aMachine({ id: 'm-2' })],
  ]);
const instances = () => new Map<string, Instance>([['i-1', anInstance({ status: 'Ready' })]]);
const fannedOut = (m = declare()) => stepped(fanOutStep(m, machines(), instances(), T0));

describe('declaring', () => {
  it('resolves machine ids, racks and NVLink domains once, each machine once, in the order named', () => {
    const candidates = [
      { id: 'm-1', rack: 'r1', nvlinkDomain: 'nvl-1' },
      { id: 'm-2', rack: 'r2' },
      { id: 'm-3', rack: 'r2' },
      { id: 'm-4', rack: 'r3', nvlinkDomain: 'nvl-1' },
    ];
    expect(resolveScope({ machineIds: ['m-1'], racks: ['r2'], nvlinkDomains: ['nvl-1'] }, candidates)).toEqual(['m-1', 'm-2', 'm-3', 'm-4']);
  });

  it('refuses names the site does not have, naming each, and a scope that resolves to nothing', () => {
    const unknown = rejection(() => resolveScope({ racks: ['r9'], nvlinkDomains: ['nvl-7'] }, [{ id: 'm-1', rack: 'r1' }]));
    expect([unknown.status, unknown.code]).toEqual([422, 'unknown-scope']);
    expect(unknown.message).toContain('rack r9');
    expect(unknown.message).toContain('NVLink domain nvl-7');
    expect(rejection(() => resolveScope({}, [{ id: 'm-1', rack: 'r1' }])).code).toBe('empty-scope');
  });

  it('gives tenants at least min_hand_back_days for planned work and emergency_min_hand_back_minutes for an emergency', () => {
    expect(rejection(() => declare({ handBackBy: inDays(13) })).code).toBe('hand-back-too-soon');
    expect(declare({ handBackBy: inDays(14) }).state).toBe('Declared');
    const soon = iso(addMs(T0, 15 * 60_000));
    expect(declare({ kind: 'emergency', handBackBy: soon }).handBackBy).toBe(soon);
    expect(rejection(() => declare({ kind: 'emergency', handBackBy: iso(addMs(T0, 14 * 60_000)) })).status).toBe(422);
  });

  it('refuses a scope that overlaps an open maintenance, naming the machines; a finished one does not count', () => {
    const open = declare();
    const overlap = rejection(() => declareMaintenance('mnt-2', request(), ['m-2', 'm-3'], [open], 'ops', T0, RULES));
    expect([overlap.status, overlap.code]).toEqual([409, 'maintenance-overlap']);
    expect(overlap.message).toContain('m-2 (mnt-1)');
    expect(overlap.message).not.toContain('m-3');
    expect(declareMaintenance('mnt-2', request(), ['m-2'], [{ ...open, state: 'Completed' }], 'ops', T0, RULES).id).toBe('mnt-2');
  });

  it('rolls out all at once and halts on the first failure unless told otherwise; every machine starts waiting', () => {
    const m = declare();
    expect(m.rollout).toEqual({ maxInFlight: 2, haltAfterFailures: 1 });
    expect(Object.values(m.machines).map((x) => x.phase)).toEqual(['waiting', 'waiting']);
  });
});

describe('the fan-out', () => {
  it('puts the override on every machine and the notice on held instances, and marks held and free machines', () => {
    const change = fanOutStep(declare(), machines(), instances(), T0)!;
    const m1 = change.machines!.find((p) => p.after.id === 'm-1')!.after;
    expect(maintenanceIdOf(m1)).toBe('mnt-1');
    expect(allocatability(m1, { timeoutMs: 30_000 }, T0).notAllocatableReasons).toContain(`health-override:${MAINTENANCE_SOURCE}`);
    expect(change.instances![0]!.after.maintenance).toEqual({
      id: 'mnt-1',
      kind: 'planned',
      category: 'firmware',
      reason: 'BMC firmware 2.4',
      handBackBy: inDays(14),
    });
    const m = stepped(change);
    expect(m.state).toBe('InProgress');
    expect(m.machines['m-1']).toMatchObject({ phase: 'held', org: 'acme', instanceId: 'i-1' });
    expect(m.machines['m-2']).toMatchObject({ phase: 'waiting', handedBackAt: iso(T0) });
  });

  it('goes a chunk at a time, then tells each org once, listing its instances', () => {
    const ids = Array.from({ length: FAN_OUT_CHUNK + 5 }, (_, i) => `m-${i + 1}`);
    let m = declare({}, ids);
    const all = new Map(ids.map((id) => [id, aMachine({ id })]));
    all.set('m-1', aMachine({ id: 'm-1', state: 'Assigned', instanceId: 'i-1' }));
    const first = fanOutStep(m, all, instances(), T0)!;
    expect(first.machines).toHaveLength(FAN_OUT_CHUNK);
    m = stepped(first);
    m = stepped(fanOutStep(m, all, instances(), T0));
    expect(m.progress.fannedOut).toBe(ids.length);
    const told = fanOutStep(m, all, instances(), T0)!;
    expect(events(told)).toEqual(['MaintenanceDeclared']);
    expect(told.history[0]!.event!.detail).toMatchObject({ org: 'acme', instanceIds: ['i-1'] });
    expect(fanOutStep(stepped(told), all, instances(), T0)).toBeNull();
  });
});

describe('waves', () => {
  it('admits free waiting machines up to maxInFlight, none while the fan-out is under way', () => {
    expect(admissible(declare(), machines())).toEqual([]);
    const m = fannedOut(declare({ rollout: { maxInFlight: 1 } }, ['m-1', 'm-2']));
    expect(admissible(m, machines())).toEqual(['m-2']);
    const admitted = stepped(admit(m, ['m-2'], T0, 60_000));
    expect(admitted.machines['m-2']).toMatchObject({ phase: 'in-maintenance', startedAt: iso(T0) });
    expect(admissible(admitted, new Map([...machines(), ['m-1', aMachine({ id: 'm-1' })]]))).toEqual([]);
  });

  it('takes a released machine as handed back once it is free of its instance', () => {
    const m = fannedOut();
    expect(handedBack(m, machines(), T0)).toBeNull();
    const later = addMs(T0, 60_000);
    const course = handedBack(m, new Map([['m-1', aMachine({ id: 'm-1' })]]), later)!;
    expect(course['m-1']).toMatchObject({ phase: 'waiting', handedBackAt: iso(later) });
  });

  it('returns a machine whose work went well, and completes when every machine is back', () => {
    let m = stepped(admit(fannedOut(), ['m-2'], T0, 60_000));
    const m2 = fanOutStep(declare(), machines(), instances(), T0)!.machines!.find((p) => p.after.id === 'm-2')!.after;
    const ok = reportWork(m, m2, true, undefined, T0)!;
    expect(ok.machines![0]!.after.healthOverrides).toEqual([]);
    m = stepped(ok);
    expect(m.machines['m-2']).toMatchObject({ phase: 'returned', returnedAt: iso(T0) });
    expect(reportWork(m, m2, true, undefined, T0)).toBeNull();
    m = { ...m, machines: { ...m.machines, 'm-1': { ...m.machines['m-1']!, phase: 'in-maintenance' } } };
    const done = reportWork(m, aMachine({ id: 'm-1' }), true, undefined, T0)!;
    expect(events(done)).toEqual(['MaintenanceCompleted']);
    expect(stepped(done)).toMatchObject({ state: 'Completed', completedAt: iso(T0) });
  });

  it('asks the agent again about accepted work it has not reported a window after taking it on, once per window', () => {
    const m = stepped(admit(fannedOut(declare({ rollout: { maxInFlight: 1 } })), ['m-2'], T0, 60_000));
    const accepted = stepped(settleStarts(m, [{ machine: aMachine({ id: 'm-2' }), accepted: true }], T0));
    const due = iso(addMs(T0, 240 * 60_000));
    expect(accepted.machines['m-2']).toMatchObject({ accepted: true, reportDueBy: due });
    expect(accepted.machines['m-2']!.leaseUntil).toBeUndefined();
    expect(unansweredStarts(accepted, addMs(T0, 239 * 60_000))).toEqual([]);
    expect(unansweredStarts(accepted, new Date(due))).toEqual(['m-2']);
    const again = admit(accepted, ['m-2'], new Date(due), 60_000);
    expect(again.history.map((h) => h.action)).toEqual(['maintenance-asked-again']);
    expect(stepped(again).machines['m-2']).toMatchObject({ phase: 'in-maintenance', startedAt: iso(T0), leaseUntil: iso(addMs(new Date(due), 60_000)) });
    expect(stepped(again).machines['m-2']!.accepted).toBeUndefined();
  });

  it('quarantines a failed machine and halts after haltAfterFailures failures until resumed', () => {
    const m = stepped(admit(fannedOut(declare({ rollout: { maxInFlight: 2, haltAfterFailures: 1 } })), ['m-2'], T0, 60_000));
    const failed = reportWork(m, aMachine({ id: 'm-2' }), false, 'flash failed', T0)!;
    expect(failed.machines![0]!.after.healthOverrides.map((o) => o.source)).toEqual(['tenant-reported-issue']);
    expect(events(failed)).toEqual(['MaintenanceHalted']);
    const halted = stepped(failed);
    expect(halted.state).toBe('Halted');
    expect(admissible(halted, new Map([['m-1', aMachine({ id: 'm-1' })]]))).toEqual([]);
    const resumed = resumeMaintenance(halted, T0);
    expect(resumed.state).toBe('InProgress');
    expect(rejection(() => resumeMaintenance(resumed, T0)).code).toBe('invalid-state');
  });
});

describe('validated return after maintenance', () => {
  const VALIDATION = { id: 'v-1', suite: 'standard' };
  /** m-2 admitted and its work reported done with validation on: validating, under both overrides. */
  const validating = (over: Partial<DeclareRequest> = {}) => {
    const m = stepped(admit(fannedOut(declare(over)), ['m-2'], T0, 60_000));
    const m2 = fanOutStep(declare(over), machines(), instances(), T0)!.machines!.find((p) => p.after.id === 'm-2')!.after;
    const reported = reportWork(m, m2, true, undefined, T0, VALIDATION)!;
    return { maintenance: stepped(reported), machine: reported.machines![0]!.after, reported };
  };
  const finished = (machine: Machine, state: 'passed' | 'failed'): Machine => ({ ...machine, validation: { ...machine.validation!, state } });

  it('starts a validation for maintenance as the work is reported done, and keeps the machine out of the pool meanwhile', () => {
    const { maintenance, machine, reported } = validating();
    expect(maintenance.machines['m-2']).toMatchObject({ phase: 'validating', validationId: 'v-1' });
    expect(machine.validation).toMatchObject({ id: 'v-1', state: 'running', reason: 'maintenance', suite: 'standard' });
    expect(machine.healthOverrides.map((o) => o.source).sort()).toEqual([MAINTENANCE_SOURCE, 'validation']);
    expect(reported.history.map((h) => h.action)).toContain('validation-requested');
    expect(validationSettled(maintenance, new Map([['m-2', machine]]), T0)).toBeNull();
  });

  it('returns the machine once its validation passed: the maintenance override comes off', () => {
    const { maintenance, machine } = validating();
    const settled = validationSettled(maintenance, new Map([['m-2', finished(machine, 'passed')]]), T0)!;
    expect(stepped(settled).machines['m-2']).toMatchObject({ phase: 'returned', returnedAt: iso(T0) });
    expect(settled.machines![0]!.after.healthOverrides.map((o) => o.source)).not.toContain(MAINTENANCE_SOURCE);
  });

  it('fails the course of a machine whose validation failed, which counts towards haltAfterFailures', () => {
    const { maintenance, machine } = validating({ rollout: { maxInFlight: 2, haltAfterFailures: 1 } });
    const settled = validationSettled(maintenance, new Map([['m-2', finished(machine, 'failed')]]), T0)!;
    expect(stepped(settled).machines['m-2']).toMatchObject({ phase: 'failed', message: 'validation v-1 failed' });
    expect(stepped(settled).state).toBe('Halted');
    expect(events(settled)).toEqual(['MaintenanceHalted']);
    expect(settled.machines![0]!.after.healthOverrides.map((o) => o.source)).not.toContain(MAINTENANCE_SOURCE);
  });

  it('leaves a machine whose record holds another validation than the one the maintenance started', () => {
    const { maintenance, machine } = validating();
    const other = { ...machine, validation: { ...machine.validation!, id: 'v-other', state: 'passed' as const } };
    expect(validationSettled(maintenance, new Map([['m-2', other]]), T0)).toBeNull();
  });
});

describe('time', () => {
  it('marks a machine overdue once when its window passes before its return', () => {
    const m = { ...fannedOut(), resyncSeconds: 86_400 };
    const due = nextDueAt(m)!;
    expect(due).toBe(iso(addMs(T0, 240 * 60_000)));
    expect(timeStep(m, addMs(T0, 239 * 60_000))).toBeNull();
    const overdue = timeStep(m, new Date(due))!;
    expect(events(overdue)).toEqual(['MaintenanceOverdue']);
    expect(overdue.history.map((h) => h.machineId)).toEqual(['mnt-1', 'm-2']);
    expect(timeStep(stepped(overdue), new Date(due))).toBeNull();
  });

  it('reminds an org notice_hours before its deadline, once per deadline', () => {
    const m = { ...fannedOut(), windowMinutes: 100 * 24 * 60 };
    const reminder = addMs(T0, 13 * DAY);
    expect(timeStep(m, addMs(reminder, -1))).toBeNull();
    const due = timeStep(m, reminder)!;
    expect(events(due)).toEqual(['MaintenanceHandBackDue']);
    expect(timeStep(stepped(due), reminder)).toBeNull();
  });
});

describe('the resync, the backstop of a lost stream record', () => {
  it('is due resyncSeconds after the last step while a machine waits on a machine write, and moves on once checked', () => {
    const m = fannedOut();
    const due = iso(addMs(T0, 300_000));
    expect(resyncAt(m)).toBe(due);
    expect(nextDueAt(m)).toBe(due);
    expect(resyncStep(m, addMs(T0, 299_000))).toBeNull();
    const checked = stepped(resyncStep(m, new Date(due)));
    expect(checked).toMatchObject({ checkedAt: due, updatedAt: m.updatedAt, machines: m.machines });
    expect(resyncAt(checked)).toBe(iso(addMs(T0, 600_000)));
  });

  it('is not due once no machine waits on a write only the stream announces, nor for a finished maintenance', () => {
    const m = fannedOut();
    const admitted = Object.fromEntries(Object.entries(m.machines).map(([id, c]) => [id, { ...c, phase: 'in-maintenance' as const, accepted: true }]));
    expect(resyncAt({ ...m, machines: admitted })).toBeUndefined();
    expect(resyncAt({ ...m, state: 'Completed' })).toBeUndefined();
    const validating = { ...m, machines: { ...m.machines, 'm-2': { ...m.machines['m-2']!, phase: 'validating' as const } } };
    expect(resyncAt(validating)).toBe(iso(addMs(T0, 300_000)));
  });
});

describe('deferrals', () => {
  it('moves an org’s deadline when the provider accepts, and leaves it when rejected', () => {
    const m = fannedOut();
    const asked = requestDeferral(m, 'acme', inDays(30), 'training run ends on the 30th', T0);
    expect(asked.deferrals).toEqual([{ org: 'acme', until: inDays(30), reason: 'training run ends on the 30th', state: 'requested' }]);
    const accepted = decideDeferral(asked, 'acme', 'accept', 'ops', T0);
    expect(accepted.machines['m-1']!.handBackBy).toBe(inDays(30));
    expect(accepted.deferrals[0]).toMatchObject({ state: 'accepted', decidedBy: 'ops' });
    expect(decideDeferral(asked, 'acme', 'reject', 'ops', T0).machines['m-1']!.handBackBy).toBe(inDays(14));
    expect(rejection(() => decideDeferral(accepted, 'acme', 'accept', 'ops', T0)).code).toBe('invalid-state');
    expect(rejection(() => decideDeferral(m, 'acme', 'accept', 'ops', T0)).status).toBe(404);
  });

  it('refuses a deferral of emergency work, from an org holding nothing, or not past the deadline', () => {
    const emergency = fannedOut(declare({ kind: 'emergency', handBackBy: inDays(1) }));
    expect(rejection(() => requestDeferral(emergency, 'acme', inDays(30), 'no', T0)).code).toBe('deferral-not-allowed');
    expect(rejection(() => requestDeferral(fannedOut(), 'globex', inDays(30), 'no', T0)).code).toBe('nothing-held');
    expect(rejection(() => requestDeferral(fannedOut(), 'acme', inDays(14), 'no', T0)).code).toBe('deferral-too-short');
  });
});

describe('cancelling', () => {
  it('takes the override off machines not yet admitted and the notice off instances; admitted ones finish', () => {
    const admitted = stepped(admit(fannedOut(), ['m-2'], T0, 60_000));
    const cancelled = cancelMaintenance(admitted, T0);
    const told = fanOutStep(declare(), machines(), instances(), T0)!;
    const held = new Map(told.machines!.map((p) => [p.after.id, p.after]));
    const unwound = unwindStep(cancelled, held, new Map([['i-1', told.instances![0]!.after]]), T0)!;
    expect(unwound.machines!.map((p) => p.after.id)).toEqual(['m-1']);
    expect(unwound.machines![0]!.after.healthOverrides).toEqual([]);
    expect(unwound.instances![0]!.after.maintenance).toBeUndefined();
    expect(unwindStep(stepped(unwound), held, new Map(), T0)).toBeNull();
    expect(rejection(() => cancelMaintenance(cancelled, T0)).code).toBe('invalid-state');
  });
});
