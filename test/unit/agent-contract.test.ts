import { describe, expect, it } from 'vitest';
import { cleanupReportBody, heartbeatBody as heartbeatRouteBody } from '#domain/core/schemas.ts';
import { agentPaths, cleanupReport, createInstanceRequest, heartbeatBody, instanceStatusAnswer } from '#site/agent-contract.ts';

describe('site agent contract', () => {
  it('takes a heartbeat with and without alerts', () => {
    const body = {
      machines: [{ id: 'gb200-r1-01' }, { id: 'gb200-r1-02', alerts: [{ id: 'ecc', message: 'ECC errors', classifications: ['PreventAllocations'] }] }],
    };
    expect(heartbeatBody.parse(body)).toEqual(body);
    expect(heartbeatRouteBody.parse(body)).toEqual(body);
  });

  const tooMany = <T>(count: number, item: T) => Array.from({ length: count }, () => item);
  it.each([
    ['an unknown classification', { machines: [{ id: 'm-1', alerts: [{ id: 'a', message: '', classifications: ['Reboot'] }] }] }],
    ['an alert without id', { machines: [{ id: 'm-1', alerts: [{ message: 'x', classifications: [] }] }] }],
    ['a bad machine id', { machines: [{ id: '../m' }] }],
    ['an unknown field', { machines: [{ id: 'm-1', state: 'up' }] }],
    ['a classification twice over', { machines: [{ id: 'm-1', alerts: [{ id: 'a', message: '', classifications: tooMany(4, 'PreventAllocations') }] }] }],
    ['65 alerts', { machines: [{ id: 'm-1', alerts: tooMany(65, { id: 'a', message: '', classifications: [] }) }] }],
    ['a message over 4096 characters', { machines: [{ id: 'm-1', alerts: [{ id: 'a', message: 'x'.repeat(4097), classifications: [] }] }] }],
    ['an empty alert id', { machines: [{ id: 'm-1', alerts: [{ id: '', message: '', classifications: [] }] }] }],
  ])("refuses a heartbeat with %s, on the agent's side and the route's alike", (_name, body) => {
    expect(heartbeatBody.safeParse(body).success).toBe(false);
    expect(heartbeatRouteBody.safeParse(body).success).toBe(false);
  });

  it('knows the two instance states and nothing else', () => {
    expect(instanceStatusAnswer.parse({ state: 'cleaning' })).toEqual({ state: 'cleaning' });
    expect(instanceStatusAnswer.safeParse({ state: 'absent' }).success).toBe(false);
  });

  it('needs every field of a create and a boolean ok in a cleanup report', () => {
    expect(createInstanceRequest.safeParse({ name: 'job', machineId: 'm-1', instanceId: 'i-1' }).success).toBe(false);
    expect(cleanupReport.parse({ ok: false, message: 'disk wipe failed' })).toEqual({ ok: false, message: 'disk wipe failed' });
    expect(cleanupReport.safeParse({ ok: 'yes' }).success).toBe(false);
    for (const report of [{ ok: true }, { ok: false, message: 'x'.repeat(4097) }, { ok: true, extra: 1 }]) {
      expect(cleanupReportBody.safeParse(report).success).toBe(cleanupReport.safeParse(report).success);
    }
  });

  it('escapes the instance name in its path', () => {
    expect(agentPaths.instance('a/b c')).toBe('/instances/a%2Fb%20c');
  });
});
