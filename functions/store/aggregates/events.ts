import type { HistoryEntry } from '#domain/core/model.ts';
import type { OutboxWindow } from '#domain/events/outbox.ts';
import type { Aggregate } from '#store/aggregate.ts';
import {
  eventDayPartition,
  eventDeliveryItem,
  eventKeys,
  fromHistoryItem,
  historyItem,
  positionedOutboxEntryOf,
  reportPartition,
  siteHistoryItem,
  type PositionedOutboxEntry,
} from '#store/aggregates/event-items.ts';
import { allItems } from '#store/item-reads.ts';
import type { Page } from '#store/paging.ts';
import { StaleWriteError, type PageRequest } from '#store/port.ts';
import { indexes } from '#store/table.ts';

export interface EventStore {
  /** A machine's history, newest first. */
  listHistory(machineId: string, page: PageRequest): Promise<Page<HistoryEntry>>;
  /** An org's issue reports (its releases with an issue: history entries with `reportingOrg`), newest first: one Query. */
  listReports(org: string, page: PageRequest): Promise<Page<HistoryEntry>>;
  /** A machine's history from `at` on (that instant included), oldest first, at most `limit` entries: one Query. */
  historySince(machineId: string, at: string, limit: number): Promise<HistoryEntry[]>;
  /** Every history entry carrying an event on one UTC day (`yyyy-mm-dd`), oldest first: what repair stats count. */
  eventsOnDay(day: string): Promise<HistoryEntry[]>;
  /** Record an event's delivery once: false when a marker for `eventId` already exists (nothing is written then). */
  recordEventDelivery(eventId: string, delivered: HistoryEntry): Promise<boolean>;
  /** Of these event ids, those whose delivery is recorded (BatchGetItem of their markers). */
  deliveredEventIds(eventIds: string[]): Promise<Set<string>>;
  /** One UTC day's outbox entries inside `window`, oldest first, paged: one Query of the eventsByDay index. */
  outboxEntriesOfDay(day: string, window: OutboxWindow, page: PageRequest): Promise<Page<PositionedOutboxEntry>>;
}

export const events: Aggregate<EventStore> = {
  writes: (change, to) => {
    for (const entry of change.history) to.created(historyItem(entry, to.uniqueSuffix()));
    for (const entry of change.siteHistory ?? []) to.created(siteHistoryItem(entry));
  },
  store: ({ items }) => ({
    async listHistory(machineId, page) {
      const result = await items.queryItems(
        {
          partition: eventKeys.history(machineId, '', '').pk,
          sort: { beginsWith: eventKeys.historyPrefix },
          descending: true,
          limit: page.limit,
          // A machine's own partition, read strongly: whoever just acted on the machine sees the entry it wrote.
          consistent: true,
        },
        page.nextToken,
      );
      return { items: result.items.map(fromHistoryItem), nextToken: result.nextToken };
    },

    async listReports(org, page) {
      const result = await items.queryItems({ index: indexes.byOrg, partition: reportPartition(org), descending: true, limit: page.limit }, page.nextToken);
      return { items: result.items.map(fromHistoryItem), nextToken: result.nextToken };
    },

    async historySince(machineId, at, limit) {
      const { pk } = eventKeys.history(machineId, '', '');
      // Sort keys are `HISTORY#<ISO time>#<unique>`: every one from `at` on sorts below `HISTORY#~`.
      const result = await items.queryItems({ partition: pk, sort: { between: [`${eventKeys.historyPrefix}${at}`, `${eventKeys.historyPrefix}~`] }, limit });
      return result.items.map(fromHistoryItem);
    },

    /** One Query (paged) of the sparse eventsByDay index: costs the day's events, not the fleet. */
    async eventsOnDay(day) {
      return (await allItems(items, { index: indexes.eventsByDay, partition: eventDayPartition(day) })).map(fromHistoryItem);
    },

    /**
     * Record that an event went out: a marker per event id, written only while there is none, and the `delivered`
     * history entry in the same transaction. False when its delivery was already recorded (a duplicated or
     * redelivered stream record).
     */
    async recordEventDelivery(eventId, delivered) {
      try {
        await items.writeItems([
          { put: eventDeliveryItem(eventId, delivered), expectedVersion: null },
          { put: historyItem(delivered, items.historySuffix()), expectedVersion: null },
        ]);
        return true;
      } catch (error) {
        if (error instanceof StaleWriteError) return false;
        throw error;
      }
    },

    async deliveredEventIds(eventIds) {
      const markers = await items.getItems([...new Set(eventIds)].map(eventKeys.eventDelivery));
      return new Set(markers.map((marker) => String(marker.eventId)));
    },

    async outboxEntriesOfDay(day, window, page) {
      const result = await items.queryItems(
        { index: indexes.eventsByDay, partition: eventDayPartition(day), sort: { between: [window.after, window.until] }, limit: page.limit },
        page.nextToken,
      );
      // The range is inclusive: the entry at `after` was settled before.
      const found = result.items.filter((item) => item.eventDaySk !== window.after);
      return { items: found.flatMap((item) => positionedOutboxEntryOf(item) ?? []), nextToken: result.nextToken };
    },
  }),
};
