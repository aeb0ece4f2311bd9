import { describe, expect, it } from 'vitest';
import { assignInstance, releaseInstance, type NewInstanceSpec } from '#domain/instances/instances.ts';
import { instanceView } from '#domain/meta-instances/views.ts';
import type { Instance, InstanceStatus, Machine } from '#domain/core/model.ts';
import { Rejection } from '#domain/core/rejection.ts';
import type { ReleaseReport } from '#domain/repair/repair.ts';
import { iso } from '#domain/core/time.ts';
import { aMachine, anInstance, NOW, T0 } from '#test/support/fixtures.ts';

const machine = (over: Partial<Machine> = {}): Machine => aMachine({ labels: { pool: 'a' }, version: 5, ...over });

const instance = (over: Partial<Instance> = {}): Instance => anInstance({ version: 3, ...over });

const assignedMachine = (over: Partial<Machine> = {}) => machine({ state: 'Assigned', instanceId: 'i-1', ...over });

describe('assignInstance', () => {
  const spec: NewInstanceSpec = {
    id: 'i-7',
    org: 'acme',
    name: 'train',
    labels: { team: 'ml' },
    clientToken: 'ct-7',
    createdBy: 'alice',
  };

  it('assigns the machine and creates a Provisioning instance in one change with one history entry', () => {
    const free = machine();
    const { change, instance: created } = assignInstance(free, spec, NOW);

    expect(created).toEqual({
      id: 'i-7',
      org: 'acme',
      name: 'train',
      machineId: 'm-1',
      machineType: 'gb200',
      status: 'Provisioning',
      labels: { team: 'ml' },
      createAttempts: 0,
      siteName: 'train',
      creation: { clientToken: 'ct-7', phase: 'pending' },
      createdBy: 'alice',
      createdAt: iso(NOW),
      updatedAt: iso(NOW),
      version: 0,
    });
    expect(change.instances).toEqual([{ before: null, after: created }]);
    expect(change.machines).toEqual([{ before: free, after: { ...free, state: 'Assigned', instanceId: 'i-7', assignedAt: iso(NOW), updatedAt: iso(NOW) } }]);
    // The machine's version is the one read: the store guards the write on it.
    expect(change.machines![0]!.before!.version).toBe(5);
    expect(change.machines![0]!.after.version).toBe(5);
    expect(change.history).toEqual([
      {
        machineId: 'm-1',
        at: iso(NOW),
        actor: 'alice',
        action: 'instance-created',
        instanceId: 'i-7',
        changes: { state: { from: 'Ready', to: 'Assigned' }, instanceId: { to: 'i-7' } },
      },
    ]);
  });

  it('binds the instance to its meta-instance when given', () => {
    const { instance: created } = assignInstance(machine(), { ...spec, metaInstanceId: 'mi-1' }, NOW);
    expect(created.metaInstanceId).toBe('mi-1');
    expect('metaInstanceId' in assignInstance(machine(), spec, NOW).instance).toBe(false);
  });
});

describe('releaseInstance', () => {
  // A plain release without an issue: no health override edits (those are the decision table's, see repair-decision.test.ts).
  const report: ReleaseReport = { actor: 'alice', isRepairTenant: false, policy: { kind: 'request' as const } };

  it.each(['Ready', 'Provisioning'] satisfies InstanceStatus[])('%s → Terminating, its machine into Cleanup (pending)', (status) => {
    const before = instance({ status, labels: { team: 'ml' } });
    const held = assignedMachine();
    const decision = releaseInstance(before, held, report, NOW);
    expect(decision.kind).toBe('release');
    if (decision.kind !== 'release') return;
    const terminating = { ...before, status: 'Terminating', updatedAt: iso(NOW) };
    expect(decision.instance).toEqual(terminating);
    expect(decision.change.instances).toEqual([{ before, after: terminating }]);
    expect(decision.change.machines).toEqual([
      {
        before: held,
        after: { ...held, state: 'Cleanup', cleanup: { instanceId: 'i-1', phase: 'pending', attempts: 0 }, updatedAt: iso(NOW) },
      },
    ]);
    expect(decision.change.history).toEqual([
      {
        machineId: 'm-1',
        at: iso(NOW),
        actor: 'alice',
        action: 'instance-released',
        instanceId: 'i-1',
        labels: { team: 'ml' },
        changes: { status: { from: status, to: 'Terminating' }, state: { from: 'Assigned', to: 'Cleanup' } },
      },
    ]);
  });

  it('leaves a machine that already holds another instance alone', () => {
    const decision = releaseInstance(instance({ status: 'Ready' }), assignedMachine({ instanceId: 'i-other' }), report, NOW);
    expect(decision.kind).toBe('release');
    expect(decision.kind === 'release' && decision.change.machines).toEqual([]);
  });

  it.each(['Terminating', 'Terminated', 'Failed'] satisfies InstanceStatus[])('%s is returned unchanged', (status) => {
    const before = instance({ status });
    expect(releaseInstance(before, assignedMachine(), report, NOW)).toEqual({ kind: 'unchanged', instance: before });
  });

  it('Repairing is refused: 409 online-repair-active', () => {
    let thrown: unknown;
    try {
      releaseInstance(instance({ status: 'Repairing' }), assignedMachine(), report, NOW);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(Rejection);
    expect(thrown).toMatchObject({ status: 409, code: 'online-repair-active' });
  });
});

describe('instanceView', () => {
  it('shows the API fields and hides creation, createdBy and version', () => {
    const full = instance({ status: 'Failed', failureReason: 'boom', metaInstanceId: 'mi-1', createAttempts: 3, siteName: 'job-r3' });
    const view = instanceView(full, null);
    expect(view).toEqual({
      id: 'i-1',
      org: 'acme',
      name: 'job',
      machineId: 'm-1',
      machineType: 'gb200',
      status: 'Failed',
      labels: {},
      metaInstanceId: 'mi-1',
      createAttempts: 3,
      siteName: 'job-r3',
      failureReason: 'boom',
      health: 'healthy',
      createdAt: iso(T0),
      updatedAt: iso(T0),
    });
    expect(view).not.toHaveProperty('createdBy');
    expect(view).not.toHaveProperty('version');
    expect(view).not.toHaveProperty('creation');
  });

  it('leaves out a field the record gains later: the response schema lists what is shown', () => {
    const record = { ...instance({ replacement: true, metaFailureCounted: true }), leaseOwner: 'sweep-7' };
    const view = instanceView(record, null);
    for (const hidden of ['leaseOwner', 'replacement', 'metaFailureCounted']) expect(view).not.toHaveProperty(hidden);
    expect(view).toMatchObject({ id: 'i-1', status: record.status });
  });
});
