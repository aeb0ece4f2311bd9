import { describe, expect, it } from 'vitest';
import { repairEvent } from '#domain/events/events.ts';
import { dueTimes } from '#reconcilers/due-times.ts';
import { stampRequestId } from '#domain/core/request-id.ts';
import type { AgentCall, AppContext } from '#runtime/context.ts';
import { forRequest } from '#runtime/request-scope.ts';
import { MemoryFleetStore } from '#store/memory-store.ts';
import { AT, aMachine, aMetaInstance, anInstance } from '#test/support/fixtures.ts';

// The request id travels with the work done for it: stamped on what it commits, on its events, its log lines and
// its site agent calls, by the context alone.

describe('stampRequestId', () => {
  it('stamps every written machine, instance and meta-instance, and the events that name no request yet', () => {
    const machine = aMachine();
    const ownEvent = repairEvent('RepairRequested', machine, { actor: 'alice', requestId: 'earlier' }, AT);
    const change = stampRequestId(
      {
        machines: [{ before: machine, after: { ...machine, state: 'Assigned' } }],
        instances: [{ before: null, after: anInstance() }],
        metaInstances: [{ before: null, after: aMetaInstance() }],
        history: [
          repairEvent('MachineQuarantined', machine, { actor: 'alice' }, AT),
          ownEvent,
          { machineId: 'm-1', at: AT, actor: 'alice', action: 'instance-created' },
        ],
      },
      'req-1',
    );
    expect(change.machines![0]!.after).toMatchObject({ state: 'Assigned', lastRequestId: 'req-1' });
    expect(change.machines![0]!.before).toBe(machine);
    expect(change.instances![0]!.after.lastRequestId).toBe('req-1');
    expect(change.metaInstances![0]!.after.lastRequestId).toBe('req-1');
    expect(change.history[0]!.event!.detail.requestId).toBe('req-1');
    expect(change.history[1]!.event!.detail.requestId).toBe('earlier');
    expect(change.history[2]).toEqual({ machineId: 'm-1', at: AT, actor: 'alice', action: 'instance-created' });
  });
});

describe('forRequest', () => {
  function baseContext() {
    const store = new MemoryFleetStore(dueTimes);
    const logged: Array<{ message: string; fields: Record<string, unknown> | undefined }> = [];
    const calls: Array<{ what: string; call: AgentCall | undefined }> = [];
    const ctx = {
      store,
      log: { info: (message: string, fields?: Record<string, unknown>) => void logged.push({ message, fields }), warn: () => {}, error: () => {} },
      agent: {
        create: async (_request: unknown, call?: AgentCall) => (calls.push({ what: 'create', call }), { ok: true as const, siteName: 'job', attempts: 1 }),
        delete: async (_name: string, call?: AgentCall) => (calls.push({ what: 'delete', call }), { kind: 'accepted' as const }),
      },
    } as unknown as AppContext;
    return { ctx, store, logged, calls };
  }

  it('commits through the store with the id stamped, and reads through it unchanged', async () => {
    const { ctx, store } = baseContext();
    const scoped = forRequest(ctx, 'req-7');
    await scoped.store.commit({ machines: [{ before: null, after: aMachine() }], history: [] });
    expect((await store.getMachine('m-1'))?.lastRequestId).toBe('req-7');
    expect(await scoped.store.getMachine('m-1')).toEqual(await store.getMachine('m-1'));
    // The base context is untouched: work for no request commits without an id.
    await ctx.store.commit({ machines: [{ before: null, after: aMachine({ id: 'm-2' }) }], history: [] });
    expect((await store.getMachine('m-2'))?.lastRequestId).toBeUndefined();
  });

  it('logs under the id as correlation id and tells the site agent which request a call works for', async () => {
    const { ctx, logged, calls } = baseContext();
    const scoped = forRequest(ctx, 'req-8');
    scoped.log.info('reconciled', { id: 'i-1' });
    await scoped.agent.create({ name: 'job', machineId: 'm-1', instanceId: 'i-1', clientToken: 'tok' });
    await scoped.agent.delete('job');
    expect(logged).toEqual([{ message: 'reconciled', fields: { correlation_id: 'req-8', id: 'i-1' } }]);
    expect(calls).toEqual([
      { what: 'create', call: { requestId: 'req-8' } },
      { what: 'delete', call: { requestId: 'req-8' } },
    ]);
    expect(scoped.requestId).toBe('req-8');
  });

  it('leaves the context as it is without a request id', () => {
    const { ctx } = baseContext();
    expect(forRequest(ctx, undefined)).toBe(ctx);
  });
});
