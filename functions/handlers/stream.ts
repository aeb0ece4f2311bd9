import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { DynamoDBRecord, DynamoDBStreamEvent, Context, DynamoDBBatchResponse } from 'aws-lambda';
import type { AppContext } from '#services/context.ts';
import { contextFromEnv, lazy } from '#services/lambda-context.ts';
import { reconcile } from '#services/reconcile.ts';
import { deliverOutboxEvent } from '#services/events.ts';
import type { OutboxEntry } from '#domain/events.ts';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { outboxEntryOf, type EntityRef } from '#store/items.ts';

/** Which reconciler a stream record concerns: machine and instance records; history and site items need none. */
export function entityOfRecord(record: DynamoDBRecord): EntityRef | null {
  if (record.eventName === 'REMOVE') return null;
  const pk = record.dynamodb?.Keys?.pk?.S ?? '';
  const sk = record.dynamodb?.Keys?.sk?.S ?? '';
  if (pk.startsWith('MACHINE#') && sk === '#MACHINE') return { entity: 'machine', id: pk.slice('MACHINE#'.length) };
  if (pk.startsWith('INSTANCE#') && sk === '#INSTANCE') return { entity: 'instance', id: pk.slice('INSTANCE#'.length) };
  if (pk.startsWith('META#') && sk === '#META') return { entity: 'meta-instance', id: pk.slice('META#'.length) };
  return null;
}

/** A repair event carried by a newly committed history entry (the outbox); published once per entry. */
export function eventOfRecord(record: DynamoDBRecord): OutboxEntry | null {
  if (record.eventName !== 'INSERT' || !record.dynamodb?.NewImage) return null;
  const pk = record.dynamodb.Keys?.pk?.S ?? '';
  const sk = record.dynamodb.Keys?.sk?.S ?? '';
  if (!pk.startsWith('MACHINE#') || !sk.startsWith('HISTORY#') || !record.dynamodb.NewImage.event) return null;
  return outboxEntryOf(unmarshall(record.dynamodb.NewImage as Record<string, AttributeValue>));
}

/** Reacts within a second to what changed; a record that fails is reported so only it and later ones come back. */
export function createStreamHandler(ctx: AppContext) {
  return async (event: DynamoDBStreamEvent, context?: Context): Promise<DynamoDBBatchResponse> => {
    // Several records of one entity in a batch need one reconcile: they all read the same fresh state.
    const runs = new Map<string, Promise<void>>();
    const processor = new BatchProcessor(EventType.DynamoDBStreams);
    return processPartialResponse(
      event,
      async (record: DynamoDBRecord) => {
        const outgoing = eventOfRecord(record);
        if (outgoing) return deliverOutboxEvent(ctx, outgoing);
        const ref = entityOfRecord(record);
        if (!ref) return;
        const key = `${ref.entity}#${ref.id}`;
        if (!runs.has(key)) runs.set(key, reconcile(ctx, ref));
        await runs.get(key);
      },
      processor,
      { ...(context ? { context } : {}), processInParallel: true },
    );
  };
}

export const handler = lazy(() => createStreamHandler(contextFromEnv()));
