import { addMs, iso, utcDay } from '#domain/core/time.ts';

/**
 * The sweep's fallback for the outbox. The stream delivers each event within seconds of its commit; a record it never
 * handles (dropped at `maxRecordAge`, or set aside after its retries) would lose its event. So the sweep walks the
 * eventsByDay index behind a cursor, and delivers what is older than the grace and has no delivery marker.
 *
 * A position is an entry's eventsByDay sort key (`<at>#<unique>`): they sort by time across days, as the days do.
 */
export interface OutboxWindow {
  /** The position of the last entry settled: the window holds the entries after it. */
  after: string;
  /** The latest position the window holds: the stream has had the grace to deliver anything up to it. */
  until: string;
}

const DAY_MS = 86_400_000;
/** ISO instants (`toISOString`) are this long: a position's time is its first so many characters. */
const ISO_LENGTH = 24;

/** A site's first look back, when no cursor is stored yet (a new site, or one that ran without the fallback). */
export const FIRST_LOOK_BACK_MS = DAY_MS;

/** What the sweep looks at now, from where it stopped (`through`, absent the first time); null while nothing is old enough. */
export function outboxWindow(through: string | undefined, now: Date, graceMs: number): OutboxWindow | null {
  const until = addMs(now, -graceMs);
  const after = through ?? iso(addMs(until, -FIRST_LOOK_BACK_MS));
  return after < iso(until) ? { after, until: iso(until) } : null;
}

/** The UTC days (eventsByDay partitions) a window spans, oldest first. */
export function windowDays({ after, until }: OutboxWindow): string[] {
  const days: string[] = [];
  const last = utcDay(until);
  for (let day = utcDay(after.slice(0, ISO_LENGTH)); day <= last; day = utcDay(addMs(new Date(day), DAY_MS))) days.push(day);
  return days;
}

/** Where a window is settled up to once one of its days was read whole: that day's end, or the window's own. */
export function settledThroughDay(day: string, window: OutboxWindow): string {
  const nextDay = iso(addMs(new Date(day), DAY_MS));
  // ISO instants: the earlier sorts first (Math.min takes numbers).
  if (nextDay < window.until) return nextDay;
  return window.until;
}
