import { AsyncLocalStorage } from 'node:async_hooks';
import type { FunctionName } from '#lib/lambda-functions.ts';

// The local runner is one process standing in for five Lambda functions. Where it dispatches (the API Gateway
// adapter, the stream poller, the schedule timer) it names the function it acts as, and everything that work awaits
// carries the name along: the AWS call recorder attributes each call to the role that would make it in AWS.
const scope = new AsyncLocalStorage<FunctionName>();

/** Runs `work`, and everything it starts, as the named function. */
export const runAsFunction = <T>(name: FunctionName, work: () => T): T => scope.run(name, work);

/** The function the current work runs as; undefined outside any (the runner's own setup, tests reading tables). */
export const currentFunction = (): FunctionName | undefined => scope.getStore();
