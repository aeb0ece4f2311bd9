import type { Context } from 'aws-lambda';
import { randomUUID } from 'node:crypto';

/**
 * One invocation of a site function as Lambda makes it: a context whose remaining time runs down from the function's
 * timeout, and (when the runner stops functions at their timeout) the invocation failing once it passes. Lambda then
 * freezes the work; here it runs on, unseen, which is why handlers must leave in time rather than count on being cut.
 */

export function lambdaContext(functionName: string, requestId: string, timeoutMs: number): Context {
  const deadline = Date.now() + timeoutMs;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: '1024',
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}

/** What Lambda reports for an invocation still running at the function's timeout. */
export class FunctionTimedOut extends Error {
  override name = 'FunctionTimedOut';
  constructor(timeoutMs: number) {
    super(`Task timed out after ${(timeoutMs / 1000).toFixed(2)} seconds`);
  }
}

export interface FunctionLimits {
  functionName: string;
  timeoutMs: number;
  /** Fail the invocation at the timeout, as Lambda does (FLEETWARD_AWS_SEMANTICS=lambda-timeouts). */
  stopAtTimeout: boolean;
}

/** Runs `handler` as one invocation of the function; a FunctionTimedOut when it is stopped at its timeout. */
export async function invokeFunction<R>(limits: FunctionLimits, handler: (context: Context) => Promise<R>): Promise<R> {
  const invocation = handler(lambdaContext(limits.functionName, randomUUID(), limits.timeoutMs));
  if (!limits.stopAtTimeout) return invocation;
  let timer: NodeJS.Timeout | undefined;
  const expiry = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new FunctionTimedOut(limits.timeoutMs)), limits.timeoutMs)));
  try {
    return await Promise.race([invocation, expiry]);
  } finally {
    clearTimeout(timer);
    // The work left running may still fail; Lambda would never report it.
    invocation.catch(() => {});
  }
}
