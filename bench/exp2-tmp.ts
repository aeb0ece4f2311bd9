import { startDynamoDbLocal } from '#local/dynamodb-local.ts';
import { startApiBench } from './api.ts';
import { startFloor } from './floor.ts';
import { summarize } from './stats.ts';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
const d = await startDynamoDbLocal();
const times: Record<string, number[]> = {};
let phase = '';
const timeit = (c: DynamoDBDocumentClient, who: string) => c.middlewareStack.add((next, context) => async (args) => { const t = performance.now(); try { return await next(args); } finally { if (phase) (times[`${who} ${phase} ${context.commandName}`] ??= []).push(performance.now() - t); } }, { step: 'initialize', name: 'timeit' + who });
try {
  const api = await startApiBench(d.endpoint, 'dbg', (l) => console.error(l));
  timeit(api.site.ctx.store.client, 'api');
  for (let i = 0; i < 10; i++) await api.cycle();
  const floor = await startFloor(d.endpoint, 'dbg', api.tableName, 'gb200', 'bench');
  // reach into the floor client: re-create floor with timing is hard; instead patch createDocumentClient? use global middleware via prototype
  timeit((globalThis as any).__floorDoc, 'floor');
  for (let i = 0; i < 20; i++) await floor.cycle();
  const apiC: number[] = [], flC: number[] = [];
  for (let i = 0; i < 60; i++) { phase = 'm'; const a = await api.cycle(); apiC.push(a.createMs); const f = await floor.cycle(); flC.push(f.createMs); phase = ''; }
  console.log('api create', summarize(apiC).median, 'floor create', summarize(flC).median);
  for (const [k, v] of Object.entries(times)) if (v.length >= 50) console.log(k, v.length, summarize(v).median);
  await api.stop(); await floor.stop();
} finally { await d.stop(); }
process.exit();
