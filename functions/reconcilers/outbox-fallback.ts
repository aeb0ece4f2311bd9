import { publishedEvent } from '#domain/events/events.ts';
import { outboxWindow, settledThroughDay, windowDays } from '#domain/events/outbox.ts';
import type { AppContext } from '#runtime/context.ts';
import { deliverOutboxEvent } from '#runtime/events.ts';
import { StaleWriteError } from '#store/port.ts';
import type { OutboxCursor } from '#store/aggregates/site.ts';
import type { PositionedOutboxEntry } from '#store/aggregates/event-items.ts';

/** Outbox entries read per Query, and their delivery markers per BatchGetItem (at most 100 keys). */
export const OUTBOX_PAGE = 100;
/**
 * Pages a run reads at most, so the fallback takes a bounded share of a run whatever the backlog: a stream that lost
 * many events is caught up at up to this many pages a run, the cursor keeping the place between runs.
 */
export const OUTBOX_PAGES_PER_RUN = 10;

/**
 * Deliver what the stream left undelivered (domain/events/outbox.ts): each outbox entry older than the grace whose event has
 * no delivery marker, once, by its id, through the same delivery as the stream's. The cursor moves on past what was
 * settled, page by page (at most OUTBOX_PAGES_PER_RUN) and day by day, so a crash redoes at most a page (whose
 * delivered events the markers keep from going out again). A run turned away from the cursor by a rival's move stops:
 * the rival goes on from there. Returns the events it delivered; throws once the deliveries it could make are made,
 * if any failed (the cursor stays before them).
 */
export async function deliverStrandedOutbox(ctx: AppContext): Promise<number> {
  const stored = await ctx.store.getOutboxCursor();
  const window = outboxWindow(stored?.through, ctx.clock.now(), ctx.config.sweep.outbox_grace_seconds * 1000);
  if (!window) return 0;
  const cursor = { stored, through: window.after };
  let delivered = 0;
  let pagesLeft = OUTBOX_PAGES_PER_RUN;
  for (const day of windowDays(window)) {
    let nextToken: string | undefined;
    do {
      // Out of pages: the next run goes on from the cursor.
      if (pagesLeft-- === 0) return delivered;
      const page = await ctx.store.outboxEntriesOfDay(day, window, { limit: OUTBOX_PAGE, nextToken });
      const settled = await deliverUndelivered(ctx, page.items);
      delivered += settled.delivered;
      if (!(await moveCursor(ctx, cursor, settled.through))) return delivered;
      if (settled.failure) throw settled.failure;
      nextToken = page.nextToken;
    } while (nextToken);
    // The day was read whole: the next run starts after it, however few events it held.
    if (!(await moveCursor(ctx, cursor, settledThroughDay(day, window)))) return delivered;
  }
  return delivered;
}

interface Settled {
  delivered: number;
  /** The position of the last entry of the page before the first that failed (or the page's last). */
  through: string | undefined;
  failure?: Error;
}

async function deliverUndelivered(ctx: AppContext, entries: PositionedOutboxEntry[]): Promise<Settled> {
  if (entries.length === 0) return { delivered: 0, through: undefined };
  const ids = entries.map((entry) => publishedEvent(entry.outbox).detail.id);
  const done = await ctx.store.deliveredEventIds(ids);
  const pending = entries.filter((_, i) => !done.has(ids[i]!));
  const results = await Promise.allSettled(pending.map((entry) => deliverOutboxEvent(ctx, entry.outbox)));
  const deliveredEntries = pending.filter((_, i) => results[i]!.status === 'fulfilled');
  for (const entry of deliveredEntries)
    ctx.log.warn('outbox event the stream left undelivered, delivered by the sweep', { id: publishedEvent(entry.outbox).detail.id });
  const delivered = deliveredEntries.length;
  const firstFailed = results.findIndex((result) => result.status === 'rejected');
  if (firstFailed < 0) return { delivered, through: entries.at(-1)!.position };
  const failedAt = entries.indexOf(pending[firstFailed]!);
  const reason = (results[firstFailed] as PromiseRejectedResult).reason;
  return { delivered, through: failedAt > 0 ? entries[failedAt - 1]!.position : undefined, failure: new Error(`outbox fallback: ${String(reason)}`) };
}

/** Store the cursor at `through` if that moves it on; false when a rival moved it first. */
async function moveCursor(ctx: AppContext, cursor: { stored: OutboxCursor | null; through: string }, through: string | undefined): Promise<boolean> {
  if (through === undefined || through <= cursor.through) return true;
  try {
    await ctx.store.putOutboxCursor(cursor.stored, through);
  } catch (error) {
    if (error instanceof StaleWriteError) return false;
    throw error;
  }
  cursor.stored = { through, version: (cursor.stored?.version ?? -1) + 1 };
  cursor.through = through;
  return true;
}
