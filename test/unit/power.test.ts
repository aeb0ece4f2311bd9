import { describe, expect, it } from 'vitest';
import type { Change } from '#domain/core/change.ts';
import type { Instance } from '#domain/core/model.ts';
import { claimPowerCall, powerDueAt, recordPowerCall, requestPower, type PowerRules } from '#domain/instances/power.ts';
import type { Rejection } from '#domain/core/rejection.ts';
import { anInstance } from '#test/support/fixtures.ts';

// A tenant's power action on an instance (domain/instances/power.ts): requested, claimed, answered, given up. Pure, injected dates.

const now = new Date('2026-11-27T10:00:00.000Z');
const later = (ms: number) => new Date(now.getTime() + ms);
const rules: PowerRules = { callLeaseMs: 10_000, maxAttempts: 2 };
const ready = anInstance({
  id: 'i-1',
  machineId: 'm-1',
  status: 'Ready',
  siteName: 'i-1',
  createdAt: now.toISOString(),
  updatedAt: now.toISOString(),
  version: 3,
});
const instanceAfter = (change: Change | null): Instance => change!.instances![0]!.after;

describe('a power action', () => {
  it('is recorded pending with a history entry, and refused while another is pending or the instance does not run', () => {
    const change = requestPower(ready, 'cycle', { id: 'pw-1', actor: 'alice', now });
    expect(instanceAfter(change).power).toMatchObject({ id: 'pw-1', action: 'cycle', state: 'cycling', previous: 'on', phase: 'pending', attempts: 0 });
    expect(change.history).toEqual([expect.objectContaining({ machineId: 'm-1', instanceId: 'i-1', action: 'power-requested', actor: 'alice' })]);
    expect(powerDueAt(instanceAfter(change))).toBe(now.toISOString());
    const code = (instance: Instance) => {
      try {
        requestPower(instance, 'off', { id: 'pw-2', actor: 'alice', now });
      } catch (error) {
        return (error as Rejection).code;
      }
      return 'accepted';
    };
    expect(code(instanceAfter(change))).toBe('power-action-in-progress');
    expect(code({ ...ready, status: 'Terminating' })).toBe('invalid-state');
    expect(code({ ...ready, status: 'Repairing' })).toBe('accepted');
  });

  it('is claimed under a lease, tried again after an error, and given up once its calls ran out', () => {
    const pending = instanceAfter(requestPower(ready, 'off', { id: 'pw-1', actor: 'alice', now }));
    const claimed = instanceAfter(claimPowerCall(pending, now, rules));
    expect(claimed.power).toMatchObject({ phase: 'in-flight', attempts: 1, leaseUntil: later(10_000).toISOString() });
    expect(claimPowerCall(claimed, later(5_000), rules)).toBeNull();
    const retrying = instanceAfter(recordPowerCall(claimed, 'pw-1', { kind: 'error', reason: 'no answer' }, later(1_000)));
    expect(retrying.power).toMatchObject({ phase: 'pending', error: 'no answer', leaseUntil: later(3_000).toISOString() });
    const second = instanceAfter(claimPowerCall(retrying, later(3_000), rules));
    expect(second.power).toMatchObject({ phase: 'in-flight', attempts: 2 });
    // Its lease lapsed with no outcome recorded (its caller crashed) and no call is left: the action failed.
    const givenUp = claimPowerCall(second, later(20_000), rules);
    expect(instanceAfter(givenUp).power).toMatchObject({ phase: 'failed', state: 'on', error: 'no answer' });
    expect(givenUp!.history).toEqual([expect.objectContaining({ action: 'power-failed' })]);
  });

  it('accepted leaves the state the action asked for; refused, the state it found; an outcome of another action changes nothing', () => {
    const claimed = instanceAfter(claimPowerCall(instanceAfter(requestPower(ready, 'off', { id: 'pw-1', actor: 'alice', now })), now, rules));
    expect(instanceAfter(recordPowerCall(claimed, 'pw-1', { kind: 'accepted' }, later(500))).power).toMatchObject({ phase: 'accepted', state: 'off' });
    expect(instanceAfter(recordPowerCall(claimed, 'pw-1', { kind: 'refused', reason: '404' }, later(500))).power).toMatchObject({
      phase: 'failed',
      state: 'on',
    });
    expect(recordPowerCall(claimed, 'pw-old', { kind: 'accepted' }, later(500))).toBeNull();
  });

  it('fails when the instance stopped running before its call was sent', () => {
    const pending = instanceAfter(requestPower(ready, 'cycle', { id: 'pw-1', actor: 'alice', now }));
    const ended = instanceAfter(claimPowerCall({ ...pending, status: 'Terminating' }, now, rules));
    expect(ended.power).toMatchObject({ phase: 'failed', state: 'on', error: 'instance is Terminating' });
    expect(powerDueAt(ended)).toBeUndefined();
  });
});
