import { startDynamoDbLocal } from '#local/dynamodb-local.ts';
import { startApiBench, MACHINE_TYPE, ORG } from './api.ts';
import { startFloor } from './floor.ts';
const d = await startDynamoDbLocal();
try {
  const api = await startApiBench(d.endpoint, 'dbg', (l) => console.error(l));
  let on = false;
  api.site.ctx.store.client.middlewareStack.add((next, context) => async (args: any) => {
    if (on) {
      const input = args.input;
      if (context.commandName === 'TransactWriteItemsCommand') console.log('API tx', input.TransactItems.map((i: any) => { const p = i.Put ?? i.Update; return `${JSON.stringify(p.Item ?? p.Key).length}B ${(p.Item ?? p.Key).pk}/${(p.Item ?? p.Key).sk}`; }));
      else console.log('API', context.commandName, JSON.stringify(input.Key ?? input.ExpressionAttributeValues));
    }
    return next(args);
  }, { step: 'initialize', name: 'dbg' });
  for (let i = 0; i < 3; i++) await api.cycle();
  const floor = await startFloor(d.endpoint, 'dbg', api.tableName, MACHINE_TYPE, ORG);
  on = true;
  for (let i = 0; i < 40; i++) { const c = await api.cycle(); console.log('cycle', c.createCost, c.releaseCost); }
  on = false;
  const f = await floor.cycle(); console.log('floor', f);
  await api.stop();
} finally { await d.stop(); }
process.exit();
