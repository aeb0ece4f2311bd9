import { startDynamoDbLocal } from '#local/dynamodb-local.ts';
import { createTables } from '#local/tables.ts';
import { createDocumentClient } from '#store/client.ts';
import { FleetStore } from '#store/fleet-store.ts';
import { parseSiteConfig } from '#config/site-config.ts';
import { registerMachines } from '#services/machines.ts';
import { receiveHeartbeat } from '#services/heartbeats.ts';
import { inProcessBus } from '#services/events.ts';
import { randomIds } from '#services/lambda-context.ts';
import { defaultCleanupTimings } from '#domain/cleanup.ts';
const d = await startDynamoDbLocal();
try {
  await createTables(d.endpoint, { table: 'hbx', idempotencyTable: 'hbx-i' });
  const store = new FleetStore(createDocumentClient(d.endpoint), 'hbx');
  const time: Record<string, [number, number]> = {};
  store.client.middlewareStack.add((next, context) => async (args) => { const t = performance.now(); try { return await next(args); } finally { const e = (time[context.commandName!] ??= [0, 0]); e[0]++; e[1] += performance.now() - t; } }, { step: 'initialize', name: 't' });
  const log = { info() {}, warn() {}, error() {} };
  let now = Date.parse('2030-01-01T00:00:00Z');
  const ctx: any = { store, config: parseSiteConfig(''), clock: { now: () => new Date(now) }, ids: randomIds, agent: {}, events: inProcessBus(log), log, cleanupTimings: defaultCleanupTimings };
  const ids = Array.from({ length: Number(process.env.N ?? 1000) }, (_, i) => `gb200-r${Math.floor(i / 80)}-${i % 80}`);
  let t = performance.now();
  await registerMachines(ctx, ids.map((id) => ({ id, machineType: 'gb200', rack: `rack-${id.split('-')[1]}` })), 'x');
  console.log('register', performance.now() - t, JSON.stringify(time)); for (const k in time) delete time[k];
  t = performance.now();
  await receiveHeartbeat(ctx, ids);
  console.log('roster', performance.now() - t, JSON.stringify(time));
} finally { await d.stop(); }
process.exit();
