import { describe, expect, it } from 'vitest';
import { checkInvariants, type Failure } from '../../bench/scale-invariants.ts';
import { aMachine, aMetaInstance, anInstance } from '#test/support/fixtures.ts';

// The scale soak's end-of-run checks (bench/scale-soak.ts), on hand-made fleets: a healthy one passes, and each
// kind of breakage is named.
const healthy = () => ({
  machines: [
    aMachine({ id: 'm-1', state: 'Assigned', instanceId: 'i-1' }),
    aMachine({ id: 'm-2', state: 'Assigned', instanceId: 'i-2' }),
    aMachine({ id: 'm-3' }),
  ],
  instances: [
    anInstance({ id: 'i-1', machineId: 'm-1', status: 'Ready', metaInstanceId: 'mi-1' }),
    anInstance({ id: 'i-2', machineId: 'm-2', status: 'Ready' }),
    anInstance({ id: 'i-0', machineId: 'm-3', status: 'Terminated', metaInstanceId: 'mi-1' }),
  ],
  metas: [aMetaInstance({ id: 'mi-1', status: 'Ready', minNodes: 1 })],
  failures: [{ machineId: 'm-3', metaInstanceId: 'mi-1', kind: 'override', replacedMs: 400 }] as Failure[],
});

describe('the scale soak invariants', () => {
  it('hold on a fleet where the failed machine was replaced', () => {
    expect(checkInvariants(healthy()).ok).toBe(true);
  });

  it('name a machine held by two instances, and an instance its machine does not name', () => {
    const fleet = healthy();
    fleet.instances.push(anInstance({ id: 'i-3', machineId: 'm-2', status: 'Provisioning' }));
    const result = checkInvariants(fleet);
    expect(result.machine_held_twice).toEqual(['m-2: i-2, i-3']);
    expect(result.machine_and_instance_disagree).toEqual(['i-3 on m-2']);
    expect(result.ok).toBe(false);
  });

  it('name a member whose meta-instance is gone or deleted', () => {
    const fleet = healthy();
    fleet.metas = [aMetaInstance({ id: 'mi-1', status: 'Deleted' })];
    expect(checkInvariants(fleet).orphaned_members).toEqual(['i-1 of mi-1']);
    expect(checkInvariants({ ...healthy(), metas: [] }).orphaned_members).toEqual(['i-1 of mi-1']);
  });

  it('name a failure without a replacement, and a meta-instance short of members', () => {
    const fleet = healthy();
    // The only Ready member sits on the failed machine itself.
    fleet.failures = [{ machineId: 'm-1', metaInstanceId: 'mi-1', kind: 'heartbeat', replacedMs: 300 }];
    const result = checkInvariants(fleet);
    expect(result.failures_not_replaced).toEqual(['mi-1 (failed m-1 by heartbeat)']);
    expect(result.meta_instances_short).toEqual(['mi-1 Ready 0/1']);
    const neverSeen = checkInvariants({ ...healthy(), failures: [{ machineId: 'm-3', metaInstanceId: 'mi-1', kind: 'override' }] });
    expect(neverSeen.failures_not_replaced).toEqual(['mi-1 (failed m-3 by override)']);
  });
});
