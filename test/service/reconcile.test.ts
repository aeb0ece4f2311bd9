import { describe, expect, it } from 'vitest';
import { createInstance, releaseInstance } from '#services/instances.ts';
import { SITE_AGENT_SILENT_METRIC, sweep } from '#reconcilers/sweep.ts';
import { siteCleanupTimings } from '#runtime/context.ts';
import { deliverOutboxEvent } from '#runtime/events.ts';
import { eventCatalog } from '#domain/events/event-schemas.ts';
import { SITE_SUBJECT } from '#domain/machines/site-agent-silence.ts';
import { keys } from '#store/keys.ts';
import { outboxEntryOf } from '#store/aggregates/event-items.ts';
import { beat, harness, siteWith, tenant, type Harness, reconcile } from '#test/support/service-harness.ts';

const alice = tenant('acme', 'alice');

async function provisioning(h: Harness = harness()) {
  await siteWith(h, { gb200: 2 });
  const instance = await createInstance(h.ctx, alice, { machineType: 'gb200', name: 'train' });
  return { h, instance, ref: { entity: 'instance' as const, id: instance.id } };
}

/** What a reconcile could change about one instance and its machine, to compare before and after. */
async function stateOf(h: Harness, instanceId: string, machineId: string) {
  return {
    instance: await h.store.getInstance(instanceId),
    machine: await h.store.getMachine(machineId),
    history: (await h.store.listHistory(machineId, { limit: 100 })).items,
  };
}

describe('reconciling an instance', () => {
  it("sends the agent's create once and records the outcome: Ready under the agent's name", async () => {
    const { h, instance, ref } = await provisioning();
    h.agent.willCreate({ ok: true, siteName: 'vm-train', attempts: 2 });
    await reconcile(h.ctx, ref);

    expect(h.agent.creates).toEqual([{ name: 'train', machineId: instance.machineId, instanceId: instance.id, clientToken: instance.creation.clientToken }]);
    expect(await h.store.getInstance(instance.id)).toMatchObject({ status: 'Ready', siteName: 'vm-train', createAttempts: 2, creation: { phase: 'done' } });
    expect((await h.store.listHistory(instance.machineId, { limit: 1 })).items[0]).toMatchObject({ action: 'instance-ready', instanceId: instance.id });
  });

  it('run again, late, or twice at once, it sends nothing more and changes nothing more', async () => {
    const { h, instance, ref } = await provisioning();
    await Promise.all([reconcile(h.ctx, ref), reconcile(h.ctx, ref)]);
    expect(h.agent.creates).toHaveLength(1);
    const settled = await stateOf(h, instance.id, instance.machineId);

    h.clock.advance(3_600_000);
    await reconcile(h.ctx, ref);
    await reconcile(h.ctx, { entity: 'machine', id: instance.machineId });
    expect(await sweep(h.ctx)).toEqual({ due: 0, failed: 0 });
    expect(h.agent.creates).toHaveLength(1);
    expect(await stateOf(h, instance.id, instance.machineId)).toEqual(settled);
  });

  it('a final create failure fails the instance and sends its machine through cleanup', async () => {
    const { h, instance, ref } = await provisioning();
    h.agent.willCreate({ ok: false, siteName: 'train', attempts: 3, reason: 'no image' });
    await reconcile(h.ctx, ref);
    expect(await h.store.getInstance(instance.id)).toMatchObject({ status: 'Failed', failureReason: 'no image' });
    // The same run goes on to the machine: its DELETE is sent and awaits the agent's report.
    expect(h.agent.deletes).toEqual(['train']);
    expect(await h.store.getMachine(instance.machineId)).toMatchObject({ state: 'Cleanup', cleanup: { phase: 'requested', attempts: 1 } });
  });

  it('a claim lost to a rival leaves the create to the rival: this run sends nothing', async () => {
    const { h, ref } = await provisioning();
    h.store.loseCommit('instances');
    await reconcile(h.ctx, ref);
    expect(h.agent.creates).toEqual([]);
  });

  it('a reconciler that died during the create leaves a lease; once it lapses the agent is asked, and an absent instance is created again', async () => {
    const { h, instance, ref } = await provisioning();
    h.agent.willCreate(() => Promise.reject(new Error('process killed')));
    await expect(reconcile(h.ctx, ref)).rejects.toThrow('process killed');
    expect((await h.store.getInstance(instance.id))!.creation.phase).toBe('in-flight');

    expect(await sweep(h.ctx)).toEqual({ due: 0, failed: 0 });
    expect(h.agent.creates).toHaveLength(1);

    h.clock.advance(60_000);
    h.agent.willAnswerStatus({ kind: 'absent' });
    expect(await sweep(h.ctx)).toEqual({ due: 1, failed: 0 });
    expect(h.agent.statuses).toEqual(['train']);
    // The answer put the create back to pending: the next reaction (here, the next sweep) sends it again.
    await sweep(h.ctx);
    expect(h.agent.creates).toHaveLength(2);
    // The retry carries the same client token, so the agent can recognise a create it already did.
    expect(h.agent.creates[1]!.clientToken).toBe(h.agent.creates[0]!.clientToken);
    expect((await h.store.getInstance(instance.id))!.status).toBe('Ready');
  });

  it('an instance released while its create was in flight keeps Terminating; its machine is cleaned up afterwards', async () => {
    const { h, instance, ref } = await provisioning();
    h.agent.willCreate(async (request) => {
      await releaseInstance(h.ctx, alice, request.instanceId);
      return { ok: true, siteName: 'vm-late', attempts: 1 };
    });
    await reconcile(h.ctx, ref);
    expect(await h.store.getInstance(instance.id)).toMatchObject({ status: 'Terminating', siteName: 'vm-late', creation: { phase: 'done' } });
    // The DELETE waited for the create, so it names what the agent actually created.
    expect(h.agent.deletes).toEqual(['vm-late']);
  });
});

describe('reconciling a released machine', () => {
  async function released() {
    const { h, instance, ref } = await provisioning();
    await reconcile(h.ctx, ref);
    await releaseInstance(h.ctx, alice, instance.id);
    return { h, instance, machineRef: { entity: 'machine' as const, id: instance.machineId } };
  }

  it("sends the agent's DELETE once, under the lease, and waits for the agent's report", async () => {
    const { h, instance, machineRef } = await released();
    await Promise.all([reconcile(h.ctx, machineRef), reconcile(h.ctx, machineRef)]);
    expect(h.agent.deletes).toEqual(['train']);
    expect(await h.store.getMachine(instance.machineId)).toMatchObject({ state: 'Cleanup', cleanup: { phase: 'requested', attempts: 1 } });

    // No report within the lease: the sweep asks the agent, which still holds the instance, so the DELETE goes again.
    h.clock.advance(siteCleanupTimings(h.ctx.config).reportTimeoutMs + 1);
    expect(await sweep(h.ctx)).toEqual({ due: 1, failed: 0 });
    expect(h.agent.statuses).toEqual(['train']);
    // The agent still holds it, so the cleanup is pending again: the next reaction sends the idempotent DELETE again.
    await sweep(h.ctx);
    expect(h.agent.deletes).toEqual(['train', 'train']);
    expect((await h.store.getMachine(instance.machineId))!.cleanup).toMatchObject({ attempts: 2 });
  });

  it('an agent that has no such instance frees the machine at once', async () => {
    const { h, instance, machineRef } = await released();
    h.agent.willDelete({ kind: 'gone' });
    await reconcile(h.ctx, machineRef);
    const machine = (await h.store.getMachine(instance.machineId))!;
    expect(machine).toMatchObject({ state: 'Ready' });
    expect(machine.instanceId).toBeUndefined();
    expect(await h.store.allocatableMachineIds('gb200')).toContain(machine.id);
  });

  it('a refused DELETE is retried after its backoff, not before', async () => {
    const { h, instance, machineRef } = await released();
    h.agent.willDelete({ kind: 'error', reason: 'busy' });
    await reconcile(h.ctx, machineRef);
    await reconcile(h.ctx, machineRef);
    expect(h.agent.deletes).toHaveLength(1);
    h.clock.advance(siteCleanupTimings(h.ctx.config).retryBaseMs + 1);
    await sweep(h.ctx);
    expect(h.agent.deletes).toHaveLength(2);
    expect((await h.store.getMachine(instance.machineId))!.cleanup).toMatchObject({ phase: 'requested', attempts: 2 });
  });
});

describe('deliverOutboxEvent', () => {
  it('hands the event to the bus with its stable id and notes the delivery once in the machine history', async () => {
    const h = harness();
    await siteWith(h, { gb200: 1 });
    const outbox = {
      key: 'MACHINE#gb200-1/HISTORY#2026-01-01T00:00:00.000Z#1',
      entry: {
        machineId: 'gb200-1',
        at: '2026-01-01T00:00:00.000Z',
        actor: 'test',
        action: 'event-emitted',
        event: { type: 'RepairRequested', detail: { machineId: 'gb200-1' } },
      },
    };
    await deliverOutboxEvent(h.ctx, outbox);
    await deliverOutboxEvent(h.ctx, outbox);
    expect(h.events).toHaveLength(2);
    expect(h.events[0]).toEqual(h.events[1]);
    expect(h.events[0]).toMatchObject({ type: 'RepairRequested', detail: { machineId: 'gb200-1', id: expect.any(String) } });
    const delivered = (await h.store.listHistory('gb200-1', { limit: 10 })).items.filter((e) => e.action === 'event-delivered');
    expect(delivered).toEqual([expect.objectContaining({ actor: 'event-bus', message: 'RepairRequested', eventId: h.events[0]!.detail.id })]);
  });
});

describe('the sweep and a silent site agent', () => {
  it('raises SiteAgentSilent once per silence through the outbox, and reports the metric its alarm watches', async () => {
    const h = harness();
    await siteWith(h, { gb200: 1 });
    const lastRosterAt = h.clock.now().toISOString();
    await sweep(h.ctx);
    expect(h.gauges.get(SITE_AGENT_SILENT_METRIC)).toBe(0);
    expect((await h.store.listHistory(SITE_SUBJECT, { limit: 10 })).items).toEqual([]);

    h.clock.advance(h.ctx.config.heartbeat.timeout_seconds * 1000 + 5_000);
    await sweep(h.ctx);
    await sweep(h.ctx);
    expect(h.gauges.get(SITE_AGENT_SILENT_METRIC)).toBe(1);
    const entries = (await h.store.listHistory(SITE_SUBJECT, { limit: 10 })).items;
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ action: 'event-emitted', message: 'SiteAgentSilent' });

    // The stream delivers it as any other outbox entry (its delivery is recorded in the site's history too); the
    // detail is what the published schema says.
    const item = { ...keys.siteHistory(`${lastRosterAt}#agent-silent`), ...entries[0] };
    await deliverOutboxEvent(h.ctx, outboxEntryOf(item)!);
    expect(h.events).toHaveLength(1);
    const published = h.events[0]!;
    expect(published.type).toBe('SiteAgentSilent');
    expect(eventCatalog.SiteAgentSilent.detail.parse(published.detail)).toMatchObject({
      site: h.ctx.config.site.name,
      lastRosterAt,
      silentForSeconds: h.ctx.config.heartbeat.timeout_seconds + 5,
      timeoutSeconds: h.ctx.config.heartbeat.timeout_seconds,
    });

    // The agent is back: the metric falls, and a later silence is a new event.
    await beat(h, ['gb200-1']);
    await sweep(h.ctx);
    expect(h.gauges.get(SITE_AGENT_SILENT_METRIC)).toBe(0);
    h.clock.advance(h.ctx.config.heartbeat.timeout_seconds * 1000 + 1_000);
    await sweep(h.ctx);
    const emitted = (await h.store.listHistory(SITE_SUBJECT, { limit: 10 })).items.filter((e) => e.action === 'event-emitted');
    expect(emitted).toHaveLength(2);
  });
});
