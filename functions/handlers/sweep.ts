import type { AppContext } from '#services/context.ts';
import { contextFromEnv, lazy, sharedMetrics } from '#services/lambda-context.ts';
import { sweep } from '#services/reconcile.ts';

/** The schedule's target: finish whatever is due that no stream reaction finished. */
export const createSweepHandler = (ctx: AppContext) => async () => sweep(ctx);

export const handler = lazy(() => {
  const sweepOnce = createSweepHandler(contextFromEnv());
  return async () => {
    const result = await sweepOnce();
    // The RepairsStuck alarm watches this metric (site dimension set in lambda-context.ts).
    sharedMetrics.publishStoredMetrics();
    return result;
  };
});
