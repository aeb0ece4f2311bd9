import { randomUUID } from 'node:crypto';
import { appendFileSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { MiddlewareStack } from '@smithy/types';
import type { FunctionName } from '#lib/lambda-functions.ts';
import { currentFunction } from './function-scope.ts';
import { iamCallsOf, type AwsService, type IamCall, type LocalResourceNames } from './iam-calls.ts';

/** The directory the local runner records its AWS calls in; unset, nothing is recorded. */
export const AWS_CALL_LOG_ENV = 'FLEETWARD_AWS_CALL_LOG';

/** One line of the log: what a function asked IAM for, in logical resource names. */
export interface RecordedCall extends IamCall {
  function: FunctionName;
}

export interface AwsCallRecorder {
  /** From now on, every command the client sends from inside a function is recorded (see function-scope.ts). */
  // biome-ignore lint/suspicious/noExplicitAny: any SDK client; each types its stack by its own commands' inputs and outputs
  instrument(client: { middlewareStack: MiddlewareStack<any, any> }, service: AwsService): void;
}

interface CallLog {
  file: string;
  seen: Set<string>;
}

// One file and one memory of what was written per process and directory: each distinct call is written once, at
// its first sight and synchronously, so that a runner killed with SIGKILL the next moment has lost nothing.
const logs = new Map<string, CallLog>();

function callLogIn(dir: string): CallLog {
  const absolute = resolve(dir);
  let log = logs.get(absolute);
  if (!log) {
    mkdirSync(absolute, { recursive: true });
    log = { file: join(absolute, `${process.pid}-${randomUUID().slice(0, 8)}.jsonl`), seen: new Set() };
    logs.set(absolute, log);
  }
  return log;
}

function record(log: CallLog, call: RecordedCall): void {
  const line = JSON.stringify({ function: call.function, action: call.action, resource: call.resource, ...(call.context ? { context: call.context } : {}) });
  if (log.seen.has(line)) return;
  log.seen.add(line);
  appendFileSync(log.file, `${line}\n`);
}

/**
 * Records the AWS calls of the local site's functions into `dir` (JSON lines), for the IAM test to hold against each
 * function's role. A client middleware on the clients that stand in for the functions' own: the store's and the
 * idempotency records' DynamoDB clients, the EventBridge client, and the stream poller's DynamoDB Streams client
 * (Lambda's event source mapping reads the stream with the stream function's role). Calls made outside any function
 * (the runner's own setup, tests reading the tables) are not a function's and are left out.
 */
export function createAwsCallRecorder(dir: string, names: LocalResourceNames): AwsCallRecorder {
  const log = callLogIn(dir);
  return {
    instrument(client, service) {
      client.middlewareStack.add(
        (next, context) => async (args) => {
          const fn = currentFunction();
          if (fn) {
            const operation = String(context.commandName).replace(/Command$/, '');
            for (const call of iamCallsOf(service, operation, args.input as Record<string, unknown>, names)) record(log, { function: fn, ...call });
          }
          return next(args);
        },
        // Before everything else, the request's own retries included: one record per call, made before it is sent.
        { step: 'initialize', priority: 'high', name: 'fleetwardAwsCallRecorder' },
      );
    },
  };
}
