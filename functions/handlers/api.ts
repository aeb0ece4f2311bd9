// First: a deployed function's process-wide settings hold before the modules below are evaluated.
import '#handlers/lambda-runtime.ts';
import type { Logger } from '@aws-lambda-powertools/logger';
import { createApiHandler, type ApiHandlerDeps } from '#http/api-handler.ts';
import { routes } from '#http/routes/index.ts';
import type { AppContext } from '#runtime/context.ts';
import { contextFromEnv, buildOnFirstCall, withTracingLogsAndMetrics, sharedLogger } from '#handlers/lambda-context.ts';
import { forRequest } from '#runtime/request-scope.ts';
import { withTimeLeft } from '#store/deadline.ts';
import type { ApiHandler } from '#http/api-handler.ts';

/** Where Powertools keeps Idempotency-Key records: a DynamoDB table of their own, whatever the store is. */
export type IdempotencyPersistence = NonNullable<ApiHandlerDeps['idempotency']>;

/**
 * Every route works in its request's context: what it commits and logs names API Gateway's request id, and what it
 * waits for (throttles) gives up in time for it to answer within the function's timeout.
 */
export function createHttpApi(ctx: AppContext, idempotency: IdempotencyPersistence, logger?: Logger): ApiHandler {
  const api = createApiHandler(routes, ctx, { idempotency, forRequest, ...(logger ? { logger } : {}) });
  return (event, context) =>
    withTimeLeft(
      () => context.getRemainingTimeInMillis(),
      () => api(event, context),
    );
}

export const handler = buildOnFirstCall(() => {
  const ctx = contextFromEnv();
  return withTracingLogsAndMetrics(createHttpApi(ctx, ctx.idempotency, sharedLogger), {
    correlationIdOf: (event) => (event as typeof event | null)?.requestContext?.requestId,
  });
});
