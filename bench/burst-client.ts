// Worker thread of the contention part: sends one burst of creates from an event loop of its own, as clients on other
// machines would, so that the local site's one event loop serves the burst without also running its HTTP clients.
// Input (workerData): BurstRequest. Output: one message, the answers in the order the requests were made.
import { parentPort, workerData } from 'node:worker_threads';
import type { Answer, BurstRequest } from './contention.ts';

const { requests } = workerData as BurstRequest;
const answers = await Promise.all(
  requests.map(async ({ url, headers, body }): Promise<Answer> => {
    const t0 = performance.now();
    const response = await fetch(url, { method: 'POST', headers, body });
    const answer = (await response.json()) as { code?: string; machineId?: string; id?: string };
    return { ms: performance.now() - t0, status: response.status, code: answer.code, machineId: answer.machineId, id: answer.id };
  }),
);
parentPort!.postMessage(answers);
