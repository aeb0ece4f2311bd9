// First: a deployed function's process-wide settings hold before the modules below are evaluated.
import '#handlers/lambda-runtime.ts';
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { DynamoDBRecord, DynamoDBStreamEvent, Context, DynamoDBBatchResponse } from 'aws-lambda';
import type { AppContext } from '#runtime/context.ts';
import { contextFromEnv, buildOnFirstCall, withTracingLogsAndMetrics } from '#handlers/lambda-context.ts';
import { repairEvents } from '#handlers/repair-events.ts';
import { signedSiteAgent } from '#handlers/lambda-site-agent.ts';
import { forRequest, requestIdOf } from '#runtime/request-scope.ts';
import { withTimeLeft } from '#store/deadline.ts';
import { deliverOutboxEvent } from '#runtime/events.ts';
import type { OutboxEntry } from '#domain/events/events.ts';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { recordOfKey, recordSources } from '#reconcilers/records.ts';
import type { RecordKind, RecordTypes } from '#reconcilers/reconciler.ts';
import { registry } from '#reconcilers/registry.ts';
import { keys } from '#store/keys.ts';
import { outboxEntryOf } from '#store/aggregates/event-items.ts';
import { startRun } from '#reconcilers/runner.ts';

type Image = NonNullable<NonNullable<DynamoDBRecord['dynamodb']>['NewImage']>;

/** A changed record some reconciler watches, with its images decoded (absent when the stream record has none). */
export interface ChangedRecord<K extends RecordKind = RecordKind> {
  kind: K;
  id: string;
  before: RecordTypes[K] | null;
  after: RecordTypes[K] | null;
}

/** Which watched record a stream record carries (a kind some reconciler watches); history, site items and deletes carry none. */
export function entityOfRecord(record: DynamoDBRecord): ChangedRecord | null {
  if (record.eventName === 'REMOVE') return null;
  const found = recordOfKey(record.dynamodb?.Keys?.pk?.S ?? '', record.dynamodb?.Keys?.sk?.S ?? '');
  if (!found || !registry.watchedRecordKinds.includes(found.kind)) return null;
  const decode = (image: Image | undefined) => (image ? recordSources[found.kind].decode(unmarshall(image as Record<string, AttributeValue>)) : null);
  return { ...found, before: decode(record.dynamodb?.OldImage), after: decode(record.dynamodb?.NewImage) };
}

/** An event carried by a newly committed machine or site history entry (the outbox); published once per entry. */
export function eventOfRecord(record: DynamoDBRecord): OutboxEntry | null {
  if (record.eventName !== 'INSERT' || !record.dynamodb?.NewImage) return null;
  const pk = record.dynamodb.Keys?.pk?.S ?? '';
  const sk = record.dynamodb.Keys?.sk?.S ?? '';
  const historyOwner = pk.startsWith('MACHINE#') || pk === keys.siteHistory('').pk;
  if (!historyOwner || !sk.startsWith(keys.historyPrefix) || !record.dynamodb.NewImage.event) return null;
  return outboxEntryOf(unmarshall(record.dynamodb.NewImage as Record<string, AttributeValue>));
}

/**
 * Time a batch keeps back before its function's timeout: a record whose reaction has not finished by then is reported
 * failed, so the batch answers in time and the record comes back in the next one (the reactions are idempotent).
 */
export const STREAM_RESERVE_MS = 5_000;

/** Reacts within a second to what changed; a record that fails is reported so only it and later ones come back. */
export function createStreamHandler(ctx: AppContext) {
  return async (event: DynamoDBStreamEvent, context?: Context): Promise<DynamoDBBatchResponse> => {
    // One run per batch: each entity the records concern is reconciled once, however many records name it.
    const run = startRun(ctx);
    const processor = new BatchProcessor(EventType.DynamoDBStreams);
    const react = async (record: DynamoDBRecord) => {
      const outgoing = eventOfRecord(record);
      if (outgoing) return deliverOutboxEvent(ctx, outgoing);
      const changed = entityOfRecord(record);
      if (!changed) return;
      // The reaction works for the request that made the change: its logs, agent calls and commits name it.
      const requestId = requestIdOf(changed.after);
      await run.reconcile(registry.concernedBy(changed.kind, changed.before, changed.after, changed.id), requestId);
      reactionDone(forRequest(ctx, requestId), changed);
    };
    if (!context) return processPartialResponse(event, react, processor, { processInParallel: true });
    const stopAt = Date.now() + context.getRemainingTimeInMillis() - STREAM_RESERVE_MS;
    return withTimeLeft(
      () => context.getRemainingTimeInMillis(),
      () => processPartialResponse(event, (record: DynamoDBRecord) => beforeDeadline(react(record), stopAt), processor, { context, processInParallel: true }),
    );
  };
}

/** The reaction's outcome, or a failure once `stopAt` (epoch ms) passes first. */
async function beforeDeadline(reaction: Promise<unknown>, stopAt: number): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error('not finished before the batch had to answer; it comes back in the next batch')),
      Math.max(0, stopAt - Date.now()),
    );
  });
  try {
    return await Promise.race([reaction, deadline]);
  } finally {
    clearTimeout(timer);
    // Whatever the reaction comes to after the batch answered, the record's redelivery does it again.
    reaction.catch(() => {});
  }
}

/** Reconcile lag: from the record's commit to the end of the reaction to it. */
function reactionDone(ctx: AppContext, changed: ChangedRecord): void {
  if (!changed.after || !('updatedAt' in changed.after)) return;
  const lagMs = ctx.clock.now().getTime() - Date.parse(changed.after.updatedAt);
  ctx.metrics.timing('ReconcileLag', lagMs, { entity: changed.kind });
  ctx.log.info('reaction done', { entity: changed.kind, id: changed.id, lagMs });
}

export const handler = buildOnFirstCall(() =>
  withTracingLogsAndMetrics(createStreamHandler(contextFromEnv(process.env, { events: repairEvents, agent: signedSiteAgent }))),
);
