import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The invocation's deadline (Lambda's `context.getRemainingTimeInMillis()`), carried through everything its handler
 * awaits: a store call waiting out throttles gives up in time for the handler to answer, whichever function it runs
 * in and however deep in the call it is. The entry points (functions/handlers) set it from their Lambda context.
 */
const invocationTimeLeft = new AsyncLocalStorage<() => number>();

/** Runs `work`, and everything it starts, knowing the time it has left. */
export const withTimeLeft = <T>(timeLeftMs: () => number, work: () => T): T => invocationTimeLeft.run(timeLeftMs, work);

/** The time left to the current invocation's deadline, in ms; undefined outside an invocation (tests, local setup). */
export const timeLeftMs = (): number | undefined => invocationTimeLeft.getStore()?.();
