import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestSite } from '#test/support/local-site.ts';
import { cleanedUp, deliveredOf, instanceStatus, readySite, type Actors } from '#test/support/repair-steps.ts';

// One request id finds the whole story: the API's log line, the stream reaction's, the site agent call and the
// event. The id is API Gateway's request id, which answers come back with (`apigw-requestid`).

let site: TestSite;
let who: Actors;

beforeAll(async () => void ({ site, who } = await readySite(6)));
afterAll(async () => site?.stop());

/** The controller's JSON log lines (other components log plain text). */
function jsonLines(): Array<Record<string, unknown>> {
  return site.logLines.filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>);
}

const linesOf = (requestId: string) => jsonLines().filter((line) => line.correlation_id === requestId);

describe('correlation ids end to end', () => {
  it('a create request is found in the API log, the stream reaction log and the create the site agent received', async () => {
    const created = await site.call('POST', '/v2/org/acme/nico/instance', { token: who.tenant, body: { machineType: 'gb200', name: 'traced' } });
    expect(created.status).toBe(201);
    const requestId = created.headers.get('apigw-requestid')!;
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    await instanceStatus(site, who.tenant, 'acme', created.body.id, 'Ready');

    // The reaction's line comes once its whole run is over, the fleet summary's batches last.
    await site.eventually(async () =>
      linesOf(requestId).some((line) => line.message === 'reaction done' && line.entity === 'instance' && line.id === created.body.id),
    );
    const lines = linesOf(requestId);
    expect(lines).toContainEqual(expect.objectContaining({ message: 'request', level: 'INFO', method: 'POST', status: 201, service: 'fleetward' }));
    expect(lines).toContainEqual(expect.objectContaining({ message: 'site agent create finished', instanceId: created.body.id, ok: true }));

    const received = (await site.call('GET', '/_sim/requests')).body.items.filter((r: { instanceId: string }) => r.instanceId === created.body.id);
    expect(received).toEqual([expect.objectContaining({ outcome: 201, requestId })]);
  });

  it('a release reporting an issue is found in the API log, the reaction log, the agent delete and the published event', async () => {
    const created = await site.call('POST', '/v2/org/acme/nico/instance', { token: who.tenant, body: { machineType: 'h100' } });
    const instance = await instanceStatus(site, who.tenant, 'acme', created.body.id, 'Ready');
    const released = await site.call('DELETE', `/v2/org/acme/nico/instance/${instance.id}`, {
      token: who.tenant,
      body: { machineHealthIssue: { category: 'hardware', summary: 'ECC errors' } },
    });
    expect(released.status).toBe(202);
    const requestId = released.headers.get('apigw-requestid')!;
    // A different request: nothing of the create's story is found under the release's id.
    expect(requestId).not.toBe(created.headers.get('apigw-requestid'));
    await cleanedUp(site, who.admin, instance.machineId);

    const lines = linesOf(requestId);
    expect(lines).toContainEqual(expect.objectContaining({ message: 'request', method: 'DELETE', status: 202 }));
    // The reaction's line comes once its whole run (the cleanup DELETE, the fleet summary) is over.
    const reacted = (line: Record<string, unknown>) => line.message === 'reaction done' && line.entity === 'machine' && line.id === instance.machineId;
    await site.eventually(async () => linesOf(requestId).some(reacted));
    expect(site.logLines).toContainEqual(expect.stringMatching(new RegExp(`site-sim: DELETE /instances/\\S+ for request ${requestId}$`)));
    const quarantined = await site.eventually(async () => deliveredOf(site, 'MachineQuarantined', instance.machineId)[0]);
    expect(quarantined.detail.requestId).toBe(requestId);
    expect(linesOf(requestId)).toContainEqual(expect.objectContaining({ message: 'event MachineQuarantined delivered', id: quarantined.detail.id }));
  });
});
