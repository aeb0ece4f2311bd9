// Child process of the coldstart part (and of the bundle test): imports ONE synthesized bundle in this fresh Node
// process and invokes its handler once, as Lambda's runtime does after a cold start. The parent gives this process
// the function's environment (NODE_OPTIONS too, when the template sets it). Input: argv[2] the bundle file, argv[3] the event as JSON.
// Output: one JSON document on file descriptor 3 (wall and CPU timings in ms, what the handler returned); stdout and stderr
// carry the function's own logs and metrics, as on Lambda.

import { writeSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const [file, eventJson] = process.argv.slice(2);
if (!file || !eventJson) throw new Error('usage: invoke-bundle.ts <bundle.mjs> <event json>');
const event: unknown = JSON.parse(eventJson);
const context = { awsRequestId: 'coldstart', functionName: 'coldstart', getRemainingTimeInMillis: () => 10_000 };

const cpuBefore = process.cpuUsage();
const started = performance.now();
const module = (await import(pathToFileURL(file).href)) as { handler: (event: unknown, context: unknown) => Promise<unknown> };
const imported = performance.now();
const cpuImported = process.cpuUsage(cpuBefore);
const result = await module.handler(event, context);
const invoked = performance.now();
const cpuAll = process.cpuUsage(cpuBefore);
// CPU time (user + system) next to the wall clock: on a shared, loaded host the wall clock mostly measures the wait.
const cpuMs = (usage: NodeJS.CpuUsage) => (usage.user + usage.system) / 1000;
writeSync(
  3,
  JSON.stringify({ import_ms: imported - started, invoke_ms: invoked - imported, import_cpu_ms: cpuMs(cpuImported), total_cpu_ms: cpuMs(cpuAll), result }),
);
// The SDK's keep-alive sockets must not hold the process open.
process.exit(0);
