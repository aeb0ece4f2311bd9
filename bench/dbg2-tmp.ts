import { startDynamoDbLocal } from '#local/dynamodb-local.ts';
import { startApiBench } from './api.ts';
const d = await startDynamoDbLocal();
try {
  let t = performance.now();
  const api = await startApiBench(d.endpoint, 'dbg', (l) => console.error(l));
  console.log('start', performance.now() - t);
  const origIdle = api.site.streamIdle;
  let idleMs = 0, idleN = 0;
  (api.site as any).streamIdle = async (ms?: number) => { const t0 = performance.now(); try { return await origIdle(ms); } finally { idleMs += performance.now() - t0; idleN++; } };
  for (let round = 0; round < 3; round++) {
    idleMs = 0; idleN = 0;
    t = performance.now();
    let c = 0, r = 0;
    for (let i = 0; i < 20; i++) { const x = await api.cycle(); c += x.createMs; r += x.releaseMs; }
    console.log('20 cycles', (performance.now() - t).toFixed(0), 'create', (c / 20).toFixed(1), 'release', (r / 20).toFixed(1), 'streamIdle total', idleMs.toFixed(0), 'calls', idleN);
  }
  await api.stop();
} finally { await d.stop(); }
process.exit();
