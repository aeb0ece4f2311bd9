import { createApiHandler, type ApiHandlerDeps } from '#http/api-handler.ts';
import { routes } from '#http/routes/index.ts';
import type { AppContext } from '#services/context.ts';
import { contextFromEnv, lazy } from '#services/lambda-context.ts';

/** Where Powertools keeps Idempotency-Key records: a DynamoDB table of their own, whatever the store is. */
export type IdempotencyPersistence = NonNullable<ApiHandlerDeps['idempotency']>;

export const createHttpApi = (ctx: AppContext, idempotency: IdempotencyPersistence) => createApiHandler(routes, ctx, { idempotency });

export const handler = lazy(() => {
  const ctx = contextFromEnv();
  return createHttpApi(ctx, ctx.idempotency);
});
