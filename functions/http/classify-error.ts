import { IdempotencyPersistenceLayerError } from '@aws-lambda-powertools/idempotency';
import { ProblemError } from '#http/problem.ts';
import { ThrottledError } from '#store/port.ts';

/**
 * What the API answers for an error a handler did not turn into a problem itself. Refusals pass as they are; the
 * store's SDK raises some errors because of values the caller sent, and those are the caller's 4xx; everything
 * else is a genuine fault (a 500, logged in full by the caller of this function).
 */
export function classifyError(error: unknown): ProblemError | undefined {
  if (error instanceof ProblemError) return error;
  if (!(error instanceof Error)) return undefined;
  // Raised by the document client before anything was sent (see #store/client.ts), so no `$metadata`.
  if (error.name === 'UnmarshallableInputError') return invalidValues();
  if (error instanceof ThrottledError) return throttled();
  // Powertools wraps a failed call of its idempotency record (a throttle among them) in an error of its own.
  if (error instanceof IdempotencyPersistenceLayerError) return error.cause instanceof Error && isThrottle(error.cause) ? throttled() : undefined;
  if (!isServiceError(error)) return undefined;
  if (clientInputErrors.has(error.name)) return invalidValues();
  if (isThrottle(error)) return throttled();
  return undefined;
}

const isThrottle = (error: Error) => error instanceof ThrottledError || (isServiceError(error) && throttlingErrors.has(error.name));

/** DynamoDB refused the request as sent: with our own expressions fixed, only caller-supplied values vary. */
const clientInputErrors = new Set(['ValidationException', 'SerializationException']);
const throttlingErrors = new Set(['ThrottlingException', 'ProvisionedThroughputExceededException', 'RequestLimitExceeded']);

/** An answer from AWS: the SDK's service exceptions carry the request's `$metadata` and who was at `$fault`. */
const isServiceError = (error: Error) => '$metadata' in error && '$fault' in error;

const throttled = () => new ProblemError(503, 'throttled', 'The site is busy; retry after the time Retry-After gives');

/**
 * A request that reached its function's deadline before it finished: the site was too busy to answer in time. Every
 * change is one conditional transaction, so what it did is whole or not done, and a retry (with its Idempotency-Key)
 * finds out which.
 */
export const outOfTime = () => new ProblemError(503, 'throttled', 'The site is busy and could not finish in time; retry after the time Retry-After gives');

const invalidValues = () => new ProblemError(422, 'invalid-request', 'The request holds values the site cannot store or look up');
