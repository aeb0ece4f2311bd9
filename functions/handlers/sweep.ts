import type { AppContext } from '#services/context.ts';
import { publishFleetMetrics } from '#services/fleet-metrics.ts';
import { contextFromEnv, lazy, observed } from '#services/lambda-context.ts';
import { sweep } from '#services/reconcile.ts';

/** The schedule's target: finish whatever is due that no stream reaction finished, then publish the fleet's gauges. */
export const createSweepHandler = (ctx: AppContext) => async () => {
  const result = await sweep(ctx);
  await publishFleetMetrics(ctx);
  return result;
};

export const handler = lazy(() => observed(createSweepHandler(contextFromEnv())));
