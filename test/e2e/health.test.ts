import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, startDynamoDbLocal, type DynamoDbLocal } from '#local/dynamodb-local.ts';
import { startTestSite, type TestSite } from '#test/support/local-site.ts';

// The site gets a DynamoDB Local of its own, with its data in a folder, so the test can stop it and bring it back.
const dataDir = mkdtempSync(join(tmpdir(), 'fleetward-health-'));
let dynamo: DynamoDbLocal | undefined;
let site: TestSite | undefined;

afterAll(async () => {
  await site?.stop();
  await dynamo?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

async function healthNaming(expected: (down: string[]) => boolean, status: number) {
  return site!.eventually(async () => {
    const answer = await site!.call('GET', '/health');
    const down: string[] = (answer.body.down ?? []).map((d: { part: string }) => d.part);
    return answer.status === status && expected(down) ? answer : undefined;
  }, 30_000);
}

describe('GET /health of the local runner', () => {
  it('answers 503 naming DynamoDB and the stalled poller while DynamoDB Local is down, and 200 once it is back', { timeout: 120_000 }, async () => {
    const port = await freePort();
    dynamo = await startDynamoDbLocal({ port, persistDir: dataDir });
    site = await startTestSite({ dynamoEndpoint: dynamo.endpoint, healthStallAfterMs: 1_500, breaksItsDatabase: true });

    const up = await healthNaming((down) => down.length === 0, 200);
    expect(up.body).toMatchObject({
      status: 'ok',
      checks: { api: true, store: true, streamPoller: true, scheduler: true, siteAgent: true },
      down: [],
      metrics: expect.any(Object),
    });

    // DynamoDB Local may lose writes acknowledged just before it stops.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    await dynamo.stop();
    const degraded = await healthNaming((down) => down.includes('dynamodb') && down.includes('stream-poller'), 503);
    expect(degraded.body).toMatchObject({ status: 'degraded', checks: { api: true, store: false, streamPoller: false } });
    expect(degraded.body.down).toContainEqual({ part: 'dynamodb', reason: 'DynamoDB Local does not answer' });
    expect(degraded.headers.get('content-type')).toMatch(/^application\/json/);

    dynamo = await startDynamoDbLocal({ port, persistDir: dataDir });
    const recovered = await healthNaming((down) => down.length === 0, 200);
    expect(recovered.body.checks).toEqual({ api: true, store: true, streamPoller: true, scheduler: true, siteAgent: true });

    // The stream reactions work again, not just the health check: a registered machine reaches the API.
    const admin = await site.token('provider', ['provider-admin']);
    expect((await site.call('GET', '/admin/machines', { token: admin })).status).toBe(200);
  });
});
