import { CreateTableCommand, DynamoDBClient, waitUntilTableExists } from '@aws-sdk/client-dynamodb';
import { startDynamoDbLocal } from '#local/dynamodb-local.ts';
import { createDocumentClient } from '#store/client.ts';
import { FleetStore } from '#store/fleet-store.ts';
import { parseSiteConfig } from '#config/site-config.ts';
import { registerMachines } from '#services/machines.ts';
import { receiveHeartbeat } from '#services/heartbeats.ts';
import { tableDefinition } from '#store/table.ts';
const N = Number(process.env.N ?? 2000);
const d = await startDynamoDbLocal();
try {
  const admin = new DynamoDBClient({ endpoint: d.endpoint, region: 'local', credentials: { accessKeyId: 'l', secretAccessKey: 'l' } });
  for (const stream of [process.env.FIRST === 'nostream' ? false : true, process.env.FIRST === 'nostream' ? true : false]) {
    const name = `t-${stream ? 's' : 'n'}`;
    const def = tableDefinition(name);
    if (!stream) delete def.StreamSpecification;
    await admin.send(new CreateTableCommand(def));
    await waitUntilTableExists({ client: admin, maxWaitTime: 30 }, { TableName: name });
    const store = new FleetStore(createDocumentClient(d.endpoint), name);
    const log = { info() {}, warn() {}, error() {} };
    let now = Date.parse('2030-01-01T00:00:00Z');
    const ctx: any = { store, config: parseSiteConfig(''), clock: { now: () => new Date(now) }, ids: { next: (p: string) => p + Math.random() }, agent: {}, events: { publish: async () => {} }, metrics: { gauge() {} }, log, cleanupTimings: {} };
    const ids = Array.from({ length: N }, (_, i) => `gb200-r${Math.floor(i / 80)}-${i % 80}`);
    let t = performance.now();
    await registerMachines(ctx, ids.map((id) => ({ id, machineType: 'gb200', rack: `rack-${id.split('-')[1]}` })), 'x');
    const reg = performance.now() - t;
    t = performance.now();
    await receiveHeartbeat(ctx, ids);
    console.log(name, 'register', reg.toFixed(0), 'roster', (performance.now() - t).toFixed(0));
  }
} finally { await d.stop(); }
process.exit();
