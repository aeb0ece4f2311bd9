import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '#store/keys.ts';
import type { TestSite } from '#test/support/local-site.ts';
import { instanceStatus, readySite, type Actors } from '#test/support/repair-steps.ts';

// API.md "Objects": an answer shows what its route's response schema lists, nothing else. A field the control
// plane adds to a record later (here written straight into the table, so the store hands it back with the
// record) must never reach a client, in a single object or in a list.

const internalField = 'internalNote';

let site: TestSite;
let who: Actors;

beforeAll(async () => void ({ site, who } = await readySite(2)));
afterAll(async () => site?.stop());

const addInternalField = (key: Record<string, string>) =>
  site.storeClient.send(
    new UpdateCommand({
      TableName: site.tableNames.table,
      Key: key,
      UpdateExpression: 'SET #f = :v',
      ExpressionAttributeNames: { '#f': internalField },
      ExpressionAttributeValues: { ':v': 'not for clients' },
    }),
  );

describe('answers carry only what the response schemas list', () => {
  it('hides a field added to instance, machine and meta-instance records, in every view of them', async () => {
    const created = await site.call('POST', '/v2/org/acme/nico/instance', { token: who.tenant, body: { machineType: 'gb200' } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const { id, machineId } = await instanceStatus(site, who.tenant, 'acme', created.body.id, 'Ready');
    const meta = await site.call('POST', '/v2/org/acme/nico/meta-instance', { token: who.tenant, body: { machineType: 'h100' } });
    expect(meta.status, JSON.stringify(meta.body)).toBe(201);
    await site.eventually(
      async () => (await site.call('GET', `/v2/org/acme/nico/meta-instance/${meta.body.id}`, { token: who.tenant })).body.status === 'Ready',
    );

    await addInternalField(keys.instance(id));
    await addInternalField(keys.machine(machineId));
    await addInternalField(keys.metaInstance(meta.body.id));

    const answers = {
      instance: await site.call('GET', `/v2/org/acme/nico/instance/${id}`, { token: who.tenant }),
      instances: await site.call('GET', '/v2/org/acme/nico/instance', { token: who.tenant }),
      tenantMachine: await site.call('GET', `/v2/org/acme/nico/machine/${machineId}`, { token: who.tenant }),
      machine: await site.call('GET', `/admin/machines/${machineId}`, { token: who.admin }),
      machines: await site.call('GET', '/admin/machines', { token: who.admin }),
      metaInstance: await site.call('GET', `/v2/org/acme/nico/meta-instance/${meta.body.id}`, { token: who.tenant }),
      metaInstances: await site.call('GET', '/v2/org/acme/nico/meta-instance', { token: who.tenant }),
      allMetaInstances: await site.call('GET', '/admin/meta-instances', { token: who.admin }),
    };
    for (const [name, answer] of Object.entries(answers)) {
      expect(answer.status, name).toBe(200);
      expect(JSON.stringify(answer.body), name).not.toContain(internalField);
    }
    // The answers are the objects themselves, not emptied ones.
    expect(answers.instance.body).toMatchObject({ id, machineId, status: 'Ready' });
    expect(answers.instances.body.items.map((i: { id: string }) => i.id)).toContain(id);
    expect(answers.machine.body).toMatchObject({ id: machineId, instanceId: id, state: 'Assigned' });
    expect(answers.tenantMachine.body).toMatchObject({ id: machineId, instanceId: id });
    expect(answers.metaInstance.body).toMatchObject({ id: meta.body.id, status: 'Ready', instanceIds: [expect.any(String)] });

    // The records did carry the field all along: without the schemas it would have been answered.
    expect(await site.ctx.store.getInstance(id)).toHaveProperty(internalField);
    expect(await site.ctx.store.getMachine(machineId)).toHaveProperty(internalField);
    expect(await site.ctx.store.getMetaInstance(meta.body.id)).toHaveProperty(internalField);
  });
});
