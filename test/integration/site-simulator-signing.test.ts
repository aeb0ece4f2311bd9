import { describe, expect, it } from 'vitest';
import { MAX_CLOCK_SKEW_SECONDS, signRequest, type SigningKeySet } from '#site/request-signing.ts';
import { keysReadOnDemand } from '#site/signing-keys.ts';
import { agentClient, call, calls, eventually, k1, newKey, onlyK1, send, sim, simUrl, useSimulatorHarness } from '#test/support/simulator-harness.ts';

// The simulated site agent takes only calls signed as the controller signs them, and the controller's own agent
// client works against it (test/support/simulator-harness.ts has the stub controller).
useSimulatorHarness();

describe('simulated site agent: signed calls only', () => {
  const unauthorized = { status: 401, body: { error: 'unauthorized' } };
  const createBody = JSON.stringify({ name: 'job', machineId: 'gb200-r1-01', instanceId: 'i-job', clientToken: 'tok-a' });
  const requestsSeen = async () => (await call('GET', '/_sim/requests')).body.items;

  it('accepts a correctly signed call', async () => {
    expect(await send('POST', '/instances', { body: createBody })).toEqual({ status: 201, body: { name: 'job', machineId: 'gb200-r1-01' } });
    expect(await send('GET', '/instances/job')).toEqual({ status: 200, body: { state: 'present' } });
  });

  it('refuses an unsigned call on every agent route, and on paths it does not serve, without acting on it', async () => {
    expect(await send('POST', '/instances', { body: createBody, keys: null })).toEqual(unauthorized);
    expect(await requestsSeen()).toEqual([]);
    await send('POST', '/instances', { body: createBody });
    expect(await send('GET', '/instances/job', { keys: null })).toEqual(unauthorized);
    expect(await send('DELETE', '/instances/job', { keys: null })).toEqual(unauthorized);
    expect(await send('GET', '/instances/job')).toEqual({ status: 200, body: { state: 'present' } });
    expect(await send('GET', '/no-such-route', { keys: null })).toEqual(unauthorized);
  });

  it('refuses a wrong signature: another body, path or method than signed, or another secret under its key id', async () => {
    const signedFor = (method: string, target: string, body: string) => signRequest(onlyK1, { method, target, body }, new Date());
    const otherBody = JSON.stringify({ name: 'job2', machineId: 'gb200-r1-01', instanceId: 'i-job', clientToken: 'tok-a' });
    expect(await send('POST', '/instances', { body: createBody, headers: signedFor('POST', '/instances', otherBody) })).toEqual(unauthorized);
    expect(await send('DELETE', '/instances/job', { headers: signedFor('DELETE', '/instances/other', '') })).toEqual(unauthorized);
    expect(await send('DELETE', '/instances/job', { headers: signedFor('GET', '/instances/job', '') })).toEqual(unauthorized);
    const forged = { keys: [{ id: k1.id, secret: newKey('x').secret }], current: k1.id };
    expect(await send('POST', '/instances', { body: createBody, keys: forged })).toEqual(unauthorized);
    expect(await requestsSeen()).toEqual([]);
  });

  it('refuses an unknown key id', async () => {
    expect(await send('POST', '/instances', { body: createBody, keys: { keys: [newKey('k9')], current: 'k9' } })).toEqual(unauthorized);
    expect(await requestsSeen()).toEqual([]);
  });

  it(`refuses a timestamp more than ${MAX_CLOCK_SKEW_SECONDS} s away from its clock, either way`, async () => {
    const secondsAgo = (seconds: number) => new Date(Date.now() - seconds * 1000);
    expect(await send('POST', '/instances', { body: createBody, at: secondsAgo(MAX_CLOCK_SKEW_SECONDS + 1) })).toEqual(unauthorized);
    expect(await send('POST', '/instances', { body: createBody, at: secondsAgo(-MAX_CLOCK_SKEW_SECONDS - 2) })).toEqual(unauthorized);
    expect(await requestsSeen()).toEqual([]);
    expect((await send('POST', '/instances', { body: createBody, at: secondsAgo(MAX_CLOCK_SKEW_SECONDS - 5) })).status).toBe(201);
  });

  it('accepts either of two keys during a rotation, and only the new one once the old is removed', async () => {
    const k2 = newKey('k2');
    const signedByK2: SigningKeySet = { keys: [k1, k2], current: k2.id };
    expect(await send('GET', '/instances/job', { keys: signedByK2 })).toEqual(unauthorized);
    expect(await call('POST', '/_sim/keys', k2)).toEqual({ status: 200, body: { keys: [{ id: 'k1' }, { id: 'k2' }] } });
    expect((await send('GET', '/instances/job', { keys: onlyK1 })).status).toBe(404);
    expect((await send('GET', '/instances/job', { keys: signedByK2 })).status).toBe(404);
    expect(await call('DELETE', '/_sim/keys/k1')).toEqual({ status: 200, body: { keys: [{ id: 'k2' }] } });
    expect(await send('GET', '/instances/job', { keys: onlyK1 })).toEqual(unauthorized);
    expect((await send('GET', '/instances/job', { keys: signedByK2 })).status).toBe(404);
  });

  it('takes its /_sim controls unsigned, lists key ids but never secrets, and refuses a key it could not check', async () => {
    const keys = await fetch(`${simUrl}/_sim/keys`);
    expect(keys.status).toBe(200);
    const listed = await keys.text();
    expect(JSON.parse(listed)).toEqual({ keys: [{ id: 'k1' }] });
    expect(listed).not.toContain(k1.secret);
    const short = await call('POST', '/_sim/keys', { id: 'k2', secret: 'short' });
    expect(short.status).toBe(422);
    expect(short.body.errors).toEqual([{ path: 'secret', message: 'a secret is at least 32 characters' }]);
    expect((await call('POST', '/_sim/keys', { id: 'k 2', secret: newKey('k2').secret })).status).toBe(422);
    expect((await call('DELETE', '/_sim/keys/k7')).status).toBe(404);
    expect((await call('PUT', '/_sim/keys')).status).toBe(405);
  });

  it('serves a client through a key rotation: the client reads its keys again after the 401 and goes on with the new key', async () => {
    const k2 = newKey('k2');
    let secret = onlyK1;
    let reads = 0;
    const { client } = agentClient(
      2_000,
      keysReadOnDemand(async () => (reads++, secret)),
    );
    const request = { name: 'job', machineId: 'gb200-r1-01', instanceId: 'i-1', clientToken: 'tok-1' };
    expect(await client.instanceStatus('job')).toEqual({ ok: true, state: 'absent' });
    // 1. the agent accepts the new key beside the old; 2. the secret names it current; 3. the agent drops the old.
    await call('POST', '/_sim/keys', k2);
    secret = { keys: [k1, k2], current: k2.id };
    expect(await client.instanceStatus('job')).toEqual({ ok: true, state: 'absent' });
    await call('DELETE', `/_sim/keys/${k1.id}`);
    expect(reads).toBe(1);
    expect(await client.createInstance(request)).toEqual({ ok: true, siteName: 'job', attempts: 1 });
    expect(reads).toBe(2);
    const creates = (await requestsSeen()).filter((r: { kind: string }) => r.kind === 'create');
    expect(creates.map((r: { name: string; outcome: unknown }) => [r.name, r.outcome])).toEqual([['job', 201]]);
    expect(await client.instanceStatus('job')).toEqual({ ok: true, state: 'present' });
    expect(reads).toBe(2);
  });
});

describe('the agent client against the simulator', () => {
  it('500 then success: the retry is named -r2 and counted', async () => {
    await call('POST', '/_sim/faults', { op: 'create', outcomes: [500] });
    const { client, sleeps } = agentClient();
    const request = { name: 'job', machineId: 'gb200-r1-01', instanceId: 'i-1', clientToken: 'tok-1' };
    expect(await client.createInstance(request)).toEqual({ ok: true, siteName: 'job-r2', attempts: 2 });
    expect(sleeps).toEqual([250]);
    const { body } = await call('GET', '/_sim/requests');
    expect(body.items.map((r: { name: string; outcome: unknown }) => [r.name, r.outcome])).toEqual([
      ['job', 500],
      ['job-r2', 201],
    ]);
  });

  it('network failure then success: the plain name twice', async () => {
    await call('POST', '/_sim/faults', { op: 'create', outcomes: ['network'] });
    const { client } = agentClient();
    const request = { name: 'job', machineId: 'gb200-r1-01', instanceId: 'i-1', clientToken: 'tok-1' };
    expect(await client.createInstance(request)).toEqual({ ok: true, siteName: 'job', attempts: 2 });
    const { body } = await call('GET', '/_sim/requests');
    expect(body.items.map((r: { name: string; outcome: unknown }) => [r.name, r.outcome])).toEqual([
      ['job', 'network'],
      ['job', 201],
    ]);
  });

  it('a held-open create is a timeout and is not retried', async () => {
    await call('POST', '/_sim/faults', { op: 'create', outcomes: ['timeout'] });
    const { client } = agentClient(200);
    const request = { name: 'job', machineId: 'gb200-r1-01', instanceId: 'i-1', clientToken: 'tok-1' };
    const result = await client.createInstance(request);
    expect(result).toMatchObject({ ok: false, attempts: 1, lastOutcome: { kind: 'timeout' } });
    expect((await call('GET', '/_sim/requests')).body.items).toHaveLength(1);
  });

  it('stop() closes a create that is still held open', async () => {
    await call('POST', '/_sim/faults', { op: 'create', outcomes: ['timeout'] });
    const clientTimeoutMs = 10_000;
    const { client } = agentClient(clientTimeoutMs);
    const pending = client.createInstance({ name: 'job', machineId: 'gb200-r1-01', instanceId: 'i-1', clientToken: 't' });
    await eventually(async () => ((await sim.control('GET', '/_sim/requests', undefined))?.body as { items: unknown[] } | undefined)?.items[0]);
    const started = Date.now();
    await sim.stop();
    // Closed by the agent, not ended by the client's own timeout.
    expect(Date.now() - started).toBeLessThan(clientTimeoutMs);
    expect(sim.running()).toBe(false);
    // The agent went away without answering: a network failure to the client, retried against a dead port.
    expect(await pending).toMatchObject({ ok: false, lastOutcome: { kind: 'network' } });
  });

  it('deletes through the client, then reports the cleanup to the controller', async () => {
    const { client } = agentClient();
    await client.createInstance({ name: 'job', machineId: 'gb200-r2-01', instanceId: 'i-1', clientToken: 'tok-1' });
    expect(await client.deleteInstance('job')).toEqual({ ok: true, status: 202, alreadyGone: false });
    const report = await eventually(() => calls.find((c) => c.path.endsWith('/cleanup')));
    expect(report).toEqual({
      path: '/site/v1/machines/gb200-r2-01/cleanup',
      authorization: 'Bearer agent-token',
      body: { ok: true },
    });
    expect(await client.deleteInstance('job')).toEqual({ ok: true, status: 404, alreadyGone: true });
  });
});
