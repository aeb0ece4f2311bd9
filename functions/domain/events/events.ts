import { createHash } from 'node:crypto';
import { EVENT_VERSIONS, type EventType, type MachineEventType } from '#domain/events/event-versions.ts';
import type { HistoryEntry, Issue, Machine } from '#domain/core/model.ts';

/**
 * A history entry of `subject` that carries an event of `type`, at the version EVENT_VERSIONS gives it: committed with
 * the change it reports, and published by the stream (see handlers/stream.ts).
 */
export function eventEntry(subject: string, actor: string, type: EventType, at: string, detail: Record<string, unknown>): HistoryEntry {
  return { machineId: subject, at, actor, action: 'event-emitted', message: type, event: { type, detail: { version: EVENT_VERSIONS[type], ...detail } } };
}

/**
 * An event for repair automation, carried by a history entry so that it is committed in the same transaction as
 * the change it reports; the stream then publishes it (see handlers/stream.ts). Its `id` is added on delivery, from
 * the key the entry got when it was committed (see publishedEvent).
 */
export function repairEvent(
  type: MachineEventType,
  machine: Machine,
  context: { actor: string; issue?: Issue | undefined; requestId?: string | undefined },
  at: string,
  instanceId?: string,
  extra: Record<string, unknown> = {},
): HistoryEntry {
  return {
    machineId: machine.id,
    at,
    actor: context.actor,
    action: 'event-emitted',
    message: type,
    ...(instanceId ? { instanceId } : {}),
    event: {
      type,
      detail: {
        version: EVENT_VERSIONS[type],
        ...(context.requestId ? { requestId: context.requestId } : {}),
        machineId: machine.id,
        machineType: machine.machineType,
        rack: machine.rack,
        ...(instanceId ? { instanceId } : {}),
        ...(context.issue ? { issue: context.issue } : {}),
        overrides: machine.healthOverrides.map((o) => o.source),
        labels: machine.labels,
        at,
        ...extra,
      },
    },
  };
}

/** A committed history entry that carries an event (the outbox), with the key it was stored under for good. */
export interface OutboxEntry {
  key: string;
  entry: HistoryEntry & { event: NonNullable<HistoryEntry['event']> };
}

/** An event as repair automation receives it: its detail carries the stable `id`. */
export interface PublishedEvent {
  type: string;
  detail: Record<string, unknown> & { id: string };
}

// Fixed namespace of Fleetward's event ids (RFC 9562 name-based UUIDs, version 5).
const EVENT_ID_NAMESPACE = Buffer.from('6c1b0d2e4f7a4e3b9a52c1f0e8d7b6a5', 'hex');

/** The id of the event an outbox entry carries: the same for the same entry however often it is read. */
export function eventIdOf(outboxKey: string): string {
  const hash = createHash('sha1').update(EVENT_ID_NAMESPACE).update(outboxKey).digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export function publishedEvent(outbox: OutboxEntry): PublishedEvent {
  return { type: outbox.entry.event.type, detail: { ...outbox.entry.event.detail, id: eventIdOf(outbox.key) } };
}

/** The history entry that says an event went out; committed once per event id, with its delivery marker. */
export function deliveryEntry(outbox: OutboxEntry, event: PublishedEvent, at: string): HistoryEntry {
  return { machineId: outbox.entry.machineId, at, actor: 'event-bus', action: 'event-delivered', message: event.type, eventId: event.detail.id };
}
