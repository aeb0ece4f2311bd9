import { createApiHandler } from '#http/api-handler.ts';
import { routes } from '#http/routes/index.ts';
import type { AppContext } from '#services/context.ts';
import { contextFromEnv, lazy } from '#services/lambda-context.ts';

export const createHttpApi = (ctx: AppContext, idempotencyTable: string) =>
  createApiHandler(routes, ctx, { idempotency: { client: ctx.store.client, tableName: idempotencyTable } });

export const handler = lazy(() => {
  const ctx = contextFromEnv();
  return createHttpApi(ctx, ctx.idempotencyTable);
});
