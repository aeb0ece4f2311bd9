import { describe, expect, it } from 'vitest';
import type { HeartbeatView } from '#domain/core/health.ts';
import { maintenanceOverride } from '#domain/maintenance/maintenance-waves.ts';
import type { Maintenance } from '#domain/maintenance/maintenance.ts';
import { requestMemberReplacement, surplusAllowed } from '#domain/meta-instances/member-replacement.ts';
import { noReplacements, reconcileMetaInstance, type Member, type MetaSnapshot } from '#domain/meta-instances/meta-instances.ts';
import type { Instance, Machine, MetaInstance, MemberReplacement } from '#domain/core/model.ts';
import { Rejection } from '#domain/core/rejection.ts';
import { aMachine, aMetaInstance, anInstance } from '#test/support/fixtures.ts';

// Replacing a meta-instance member (domain/meta-instances/member-replacement.ts): the decisions on a snapshot, pure, injected dates.

const now = new Date('2026-11-27T10:00:00.000Z');
const at = now.toISOString();
const heartbeat: HeartbeatView = { rosterSeenAt: at, timeoutMs: 30_000 };
const issue = { category: 'HARDWARE' as const, summary: 'NVLink errors' };

const machine = (id: string, extra: Partial<Machine> = {}): Machine =>
  aMachine({ id, rack: 'rack-1', lastHeartbeatAt: at, version: 1, createdAt: at, updatedAt: at, ...extra });

function member(n: number, status: Instance['status'] = 'Ready', machineExtra: Partial<Machine> = {}): Member {
  const instance = anInstance({
    id: `i-${n}`,
    name: `i-${n}`,
    machineId: `m-${n}`,
    status,
    metaInstanceId: 'mi-1',
    siteName: `i-${n}`,
    creation: { clientToken: `ct-${n}`, phase: 'done' },
    createdAt: at,
    updatedAt: at,
    version: 2,
  });
  return { instance, machine: machine(`m-${n}`, { state: 'Assigned', instanceId: instance.id, assignedAt: at, ...machineExtra }) };
}

const meta = (replacements?: MemberReplacement[], extra: Partial<MetaInstance> = {}): MetaInstance =>
  aMetaInstance({
    minNodes: 2,
    status: 'Ready',
    createdAt: at,
    updatedAt: at,
    version: 3,
    memberIds: ['i-1', 'i-2'],
    ...(replacements ? { memberReplacements: replacements } : {}),
    ...extra,
  });

const asked = (extra: Partial<MemberReplacement> = {}): MemberReplacement => ({
  instanceId: 'i-1',
  reason: 'tenant',
  requestedAt: at,
  requestedBy: 'acme-user',
  ...extra,
});

function snapshot(m: MetaInstance, members: Member[], free: Machine[] = [machine('m-free')], extra: Partial<MetaSnapshot> = {}): MetaSnapshot {
  return {
    meta: m,
    members,
    replacements: noReplacements,
    candidates: free,
    pinned: new Map(),
    heartbeat,
    now,
    rules: { maxConsecutiveFailures: 3, backoffBaseMs: 5_000, backoffMaxMs: 600_000, maxReplacementsInFlight: 4 },
    newInstance: () => ({ id: 'i-new', org: 'acme', name: 'i-new', labels: {}, clientToken: 'ct-new', createdBy: 'meta-instance:mi-1' }),
    ...extra,
  };
}

const committed = (s: MetaSnapshot) => {
  const decision = reconcileMetaInstance(s);
  if (decision.kind !== 'commit') throw new Error('expected a commit');
  return decision.change;
};
const metaAfter = (s: MetaSnapshot) => committed(s).metaInstances!.find((v) => v.after.id === 'mi-1')!.after;

describe('asking for a member to be replaced', () => {
  it('records it on the meta-instance with an entry in the member machine history; the same request again changes nothing', () => {
    const change = requestMemberReplacement(meta(), [member(1), member(2)], { instanceId: 'i-1', issue, actor: 'acme-user', now })!;
    expect(change.metaInstances![0]!.after.memberReplacements).toEqual([asked({ issue })]);
    expect(change.history).toEqual([expect.objectContaining({ machineId: 'm-1', action: 'member-replacement-requested', instanceId: 'i-1' })]);
    expect(requestMemberReplacement(meta([asked()]), [member(1), member(2)], { instanceId: 'i-1', actor: 'acme-user', now })).toBeNull();
  });

  it('refuses a non-member, a member not Ready, a pinned one, and a meta-instance being deleted', () => {
    const refusal = (m: MetaInstance, members: Member[], instanceId = 'i-1') => {
      try {
        requestMemberReplacement(m, members, { instanceId, actor: 'acme-user', now });
      } catch (error) {
        return error instanceof Rejection ? [error.status, error.code] : error;
      }
      return 'accepted';
    };
    expect(refusal(meta(), [member(1), member(2)], 'i-9')).toEqual([404, 'not-found']);
    expect(refusal(meta(), [member(1, 'Provisioning'), member(2)])).toEqual([409, 'invalid-state']);
    expect(refusal(meta(undefined, { machineIds: ['m-1'] }), [member(1), member(2)])).toEqual([409, 'invalid-state']);
    expect(refusal(meta(undefined, { status: 'Deleting' }), [member(1), member(2)])).toEqual([409, 'invalid-state']);
  });
});

describe('the meta-instance reconciler replacing a member', () => {
  it('places a successor first when a machine is free, counted against the replacement cap', () => {
    const change = committed(snapshot(meta([asked()]), [member(1), member(2)]));
    expect(change.instances).toEqual([
      expect.objectContaining({ before: null, after: expect.objectContaining({ id: 'i-new', machineId: 'm-free', replacement: true }) }),
    ]);
    expect(change.replacements?.after.instanceIds).toEqual(['i-new']);
    const after = change.metaInstances![0]!.after;
    expect(after.memberReplacements).toEqual([asked({ successorId: 'i-new' })]);
    expect(after.memberIds).toEqual(['i-1', 'i-2', 'i-new']);
    expect(surplusAllowed(after)).toBe(1);
  });

  it('waits while the successor provisions, then releases the outgoing member once it is Ready', () => {
    const successor = (status: Instance['status']) => ({ ...member(3, status), instance: { ...member(3, status).instance, id: 'i-new' } });
    const waiting = snapshot(meta([asked({ successorId: 'i-new' })]), [member(1), member(2), successor('Provisioning')]);
    expect(reconcileMetaInstance(waiting).kind).toBe('none');
    const ready = snapshot(meta([asked({ successorId: 'i-new' })]), [member(1), member(2), successor('Ready')]);
    const change = committed(ready);
    expect(change.instances).toEqual([expect.objectContaining({ after: expect.objectContaining({ id: 'i-1', status: 'Terminating' }) })]);
    expect(change.metaInstances![0]!.after.memberReplacements).toEqual([]);
  });

  it('releases at once, with the issue quarantining the machine, when nothing is free or the cap is full', () => {
    for (const s of [
      snapshot(meta([asked({ issue })]), [member(1), member(2)], []),
      snapshot(meta([asked({ issue })]), [member(1), member(2)], undefined, { replacements: { record: null, inFlight: ['a', 'b', 'c', 'd'] } }),
    ]) {
      const change = committed(s);
      expect(change.instances).toEqual([expect.objectContaining({ after: expect.objectContaining({ id: 'i-1', status: 'Terminating' }) })]);
      const machineAfter = change.machines!.find((v) => v.after.id === 'm-1')!.after;
      expect(machineAfter.healthOverrides.map((o) => o.source)).toContain('tenant-reported-issue');
      expect(change.history).toEqual(expect.arrayContaining([expect.objectContaining({ action: 'instance-released', issue, actor: 'acme-user' })]));
    }
  });

  it('forgets a failed successor so the replacement is decided again, and drops entries whose member is gone', () => {
    const failed = { ...member(3, 'Failed'), instance: { ...member(3, 'Failed').instance, id: 'i-new', metaFailureCounted: true } };
    expect(metaAfter(snapshot(meta([asked({ successorId: 'i-new' })]), [member(1), member(2), failed])).memberReplacements).toEqual([asked()]);
    expect(metaAfter(snapshot(meta([asked()]), [member(1, 'Terminated'), member(2)])).memberReplacements).toEqual([]);
  });

  it('takes members on machines under declared maintenance into the list, and never counts the maintenance as their failure', () => {
    const maintenance = { id: 'mnt-1', kind: 'planned', category: 'firmware', reason: 'BMC', declaredBy: 'ops' } as Maintenance;
    const held = member(1, 'Ready', { healthOverrides: [maintenanceOverride(maintenance, 'm-1', at)] });
    const change = committed(snapshot(meta(), [held, member(2)]));
    expect(change.instances ?? []).toEqual([]);
    expect(change.metaInstances![0]!.after.memberReplacements).toEqual([expect.objectContaining({ instanceId: 'i-1', reason: 'maintenance' })]);
  });
});
