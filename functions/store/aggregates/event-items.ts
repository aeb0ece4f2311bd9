import type { OutboxEntry } from '#domain/events/events.ts';
import type { HistoryEntry } from '#domain/core/model.ts';
import { utcDay } from '#domain/core/time.ts';
import { SITE_SUBJECT, type SiteHistoryEntry } from '#domain/machines/site-agent-silence.ts';
import type { Item } from '#store/item-access.ts';
import { strip } from '#store/item-codec.ts';

// History entries (a machine's, or the site's) and the events they carry: the outbox is the entries with an event,
// read by the stream from the table and by the sweep's fallback from the eventsByDay index; a delivery marker per
// event id records that it went out.

/** An outbox entry with its place in the eventsByDay index (its position, domain/events/outbox.ts). */
export interface PositionedOutboxEntry {
  position: string;
  outbox: OutboxEntry;
}

export const eventKeys = {
  /** A machine's history, or the site's (SITE_SUBJECT). */
  history: (machineId: string, at: string, unique: string) => ({
    pk: machineId === SITE_SUBJECT ? 'SITE' : `MACHINE#${machineId}`,
    sk: `HISTORY#${at}#${unique}`,
  }),
  siteHistory: (key: string) => ({ pk: 'SITE', sk: `HISTORY#${key}` }),
  historyPrefix: 'HISTORY#',
  eventDelivery: (eventId: string) => ({ pk: `EVENT#${eventId}`, sk: '#DELIVERED' }),
};

export const eventDayPartition = (day: string): string => `EVENTS#${day}`;
export const reportPartition = (org: string): string => `ORG#${org}#REPORT`;

/** An entry carrying an event is also in the eventsByDay index, under its UTC day, sorted by time: the outbox's order. */
const eventDayOf = (entry: HistoryEntry, unique: string) =>
  entry.event ? { eventDayPk: eventDayPartition(utcDay(entry.at)), eventDaySk: `${entry.at}#${unique}` } : {};

/** An org's issue report (a release with an issue) is also in byOrg under the org's reports, newest first: its repair tickets. */
const reportOf = (entry: HistoryEntry, unique: string) =>
  entry.reportingOrg ? { orgPk: reportPartition(entry.reportingOrg), orgSk: `${entry.at}#${entry.machineId}#${unique}` } : {};

export function historyItem(entry: HistoryEntry, unique: string): Item {
  return { ...eventKeys.history(entry.machineId, entry.at, unique), entity: 'history', ...eventDayOf(entry, unique), ...reportOf(entry, unique), ...entry };
}

export const siteHistoryItem = ({ key, entry }: SiteHistoryEntry): Item => ({
  ...eventKeys.siteHistory(key),
  entity: 'history',
  ...eventDayOf(entry, key),
  ...entry,
});

export const fromHistoryItem = (item: Item): HistoryEntry => strip<HistoryEntry>(item);

/** A history item carrying an event (the outbox), named by its key, which never changes: the event's id derives from it. */
export function outboxEntryOf(item: Item): OutboxEntry | null {
  if (!item.event) return null;
  return { key: `${String(item.pk)}/${String(item.sk)}`, entry: fromHistoryItem(item) as OutboxEntry['entry'] };
}

/** An outbox entry read from the eventsByDay index, with its position there. */
export function positionedOutboxEntryOf(item: Item): PositionedOutboxEntry | null {
  const outbox = outboxEntryOf(item);
  return outbox ? { position: String(item.eventDaySk), outbox } : null;
}

/** One per event id: its delivery was recorded (see EventStore.recordEventDelivery). */
export function eventDeliveryItem(eventId: string, delivered: HistoryEntry): Item {
  return {
    ...eventKeys.eventDelivery(eventId),
    entity: 'event-delivery',
    eventId,
    type: delivered.message,
    machineId: delivered.machineId,
    deliveredAt: delivered.at,
  };
}
