import type { Logger } from '@aws-lambda-powertools/logger';
import { createApiHandler, type ApiHandlerDeps } from '#http/api-handler.ts';
import type { Route } from '#http/route.ts';
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
export function createHttpApi(routes: readonly Route[], ctx: AppContext, idempotency: IdempotencyPersistence, logger?: Logger): ApiHandler {
  const api = createApiHandler(routes, ctx, { idempotency, forRequest, ...(logger ? { logger } : {}) });
  return (event, context) =>
    withTimeLeft(
      () => context.getRemainingTimeInMillis(),
      () => api(event, context),
    );
}

/**
 * The Lambda handler of one API function, serving `routes` (its route group's, functions/handlers/api-*.ts): each
 * entry imports only its own table, so its bundle holds no other group's routes, services or schemas.
 */
export const lambdaApiHandler = (routes: readonly Route[]) =>
  buildOnFirstCall(() => {
    const ctx = contextFromEnv();
    return withTracingLogsAndMetrics(createHttpApi(routes, ctx, ctx.idempotency, sharedLogger), {
      correlationIdOf: (event) => (event as typeof event | null)?.requestContext?.requestId,
    });
  });
