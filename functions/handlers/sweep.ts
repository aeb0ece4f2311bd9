// First: a deployed function's process-wide settings hold before the modules below are evaluated.
import '#handlers/lambda-runtime.ts';
import { runPendingMigrations } from '#reconcilers/migrations.ts';
import { dueTimes } from '#reconcilers/due-times.ts';
import { tableNamesFromEnv } from '#store/client.ts';
import type { DynamoFleetStore } from '#store/dynamo-store.ts';
import { TableMigrations, type MigrationRunner } from '#store/migrations/runner.ts';
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import type { Context } from 'aws-lambda';
import type { SiteConfig } from '#config/site-config.ts';
import { createLeaseMs } from '#domain/instances/instances.ts';
import type { AppContext } from '#runtime/context.ts';
import { contextFromEnv, buildOnFirstCall, withTracingLogsAndMetrics } from '#handlers/lambda-context.ts';
import { signedSiteAgent } from '#handlers/lambda-site-agent.ts';
import { repairEvents } from '#handlers/repair-events.ts';
import { sweep, type SweepOptions, type SweepPosition, type SweepResult } from '#reconcilers/sweep.ts';

type SweepLease = NonNullable<SweepOptions['lease']>;
import { followUpEvent, sweepStart } from '#reconcilers/sweep-follow-up.ts';
import { withTimeLeft } from '#store/deadline.ts';

/** Starts a follow-up run from where this one stopped. */
export type HandOff = (position: SweepPosition) => Promise<void>;

/** The schedule's target (and its follow-ups'): finish whatever is due that no stream reaction finished. */
export function createSweepHandler(ctx: AppContext, handOff: HandOff, migrations?: MigrationRunner) {
  const sweepOnce = async (event: unknown, timeLeftMs?: () => number, lease?: SweepLease): Promise<SweepResult> => {
    const from = sweepStart(event);
    const result = await sweep(ctx, { from, ...(timeLeftMs ? { timeLeftMs } : {}), ...(lease ? { lease } : {}) });
    if (result.followUp) await handOff(result.followUp);
    // A scheduled run gives what it has left to the data migrations, after its lease is back: the next run's due work
    // never waits for them.
    if (migrations && !from && !result.skipped) await runPendingMigrations(ctx, migrations, timeLeftMs ?? (() => Number.POSITIVE_INFINITY));
    return result;
  };
  // What the run waits for (throttles included) gives up within its time, so it hands off rather than being cut.
  return (event: unknown, timeLeftMs?: () => number, lease?: SweepLease): Promise<SweepResult> =>
    timeLeftMs ? withTimeLeft(timeLeftMs, () => sweepOnce(event, timeLeftMs, lease)) : sweepOnce(event, undefined, lease);
}

export function eventBridgeHandOff(busName: string, client?: EventBridgeClient): HandOff {
  // The client is built at the first hand-off, not at a cold start: most runs finish in time and never hand off.
  let events = client;
  return async (position) => {
    const event = followUpEvent(position);
    events ??= new EventBridgeClient({});
    const result = await events.send(
      new PutEventsCommand({
        Entries: [{ EventBusName: busName, Source: event.source, DetailType: event['detail-type'], Detail: JSON.stringify(event.detail) }],
      }),
    );
    if (result.FailedEntryCount) throw new Error(`EventBridge refused the sweep follow-up: ${result.Entries?.[0]?.ErrorMessage ?? 'unknown error'}`);
  };
}

/**
 * Time a run keeps back before its function's timeout: an instance reconcile it starts may wait on the site agent
 * for a whole create lease, and the run must still finish it (the stack sizes the timeout to that lease plus a minute).
 */
export function sweepMarginMs(config: SiteConfig): number {
  const retry = config.instance_create_retry;
  return createLeaseMs({ maxAttempts: retry.max_attempts, baseDelayMs: retry.base_delay_ms, timeoutMs: retry.timeout_ms }) + 10_000;
}

export const handler = buildOnFirstCall(() => {
  const ctx = contextFromEnv(process.env, { agent: signedSiteAgent, events: repairEvents });
  const migrations = new TableMigrations({
    client: ctx.idempotency.client,
    table: tableNamesFromEnv(process.env).table,
    store: ctx.store as DynamoFleetStore,
    due: dueTimes,
  });
  const sweepOnce = createSweepHandler(ctx, eventBridgeHandOff(process.env.EVENT_BUS_NAME!), migrations);
  const marginMs = sweepMarginMs(ctx.config);
  return withTracingLogsAndMetrics((event: unknown, context: Context) =>
    sweepOnce(event, () => context.getRemainingTimeInMillis() - marginMs, {
      holdMs: context.getRemainingTimeInMillis(),
      lifeMs: context.getRemainingTimeInMillis(),
    }),
  );
});
