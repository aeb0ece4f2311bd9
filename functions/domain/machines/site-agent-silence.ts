import { eventEntry } from '#domain/events/events.ts';
import type { HistoryEntry } from '#domain/core/model.ts';
import { ageMs, iso } from '#domain/core/time.ts';

/** Whom a site-level history entry is about (no machine): its key puts it under the site, not a machine. */
export const SITE_SUBJECT = '#site';

/** A site-level history entry under a key of its own choosing: writing it again is a lost race, not a duplicate. */
export interface SiteHistoryEntry {
  key: string;
  entry: HistoryEntry;
}

/**
 * The SiteAgentSilent event, once per silence: keyed by the last roster's time, so every sweep of the same silence
 * names the same entry and only the first writes it. Null while the agent is heard from within the timeout.
 */
export function siteAgentSilence(site: string, lastRosterAt: string, now: Date, timeoutSeconds: number): SiteHistoryEntry | null {
  const silentMs = ageMs(now, lastRosterAt);
  if (silentMs <= timeoutSeconds * 1000) return null;
  const at = iso(now);
  const type = 'SiteAgentSilent';
  return {
    key: `${lastRosterAt}#agent-silent`,
    entry: eventEntry(SITE_SUBJECT, 'sweep', type, at, { at, site, lastRosterAt, silentForSeconds: Math.floor(silentMs / 1000), timeoutSeconds }),
  };
}

// What a Change carries of this file's records (core/change.ts).
declare module '#domain/core/change.ts' {
  interface Change {
    /** Site-level entries (events about the site), each written only if its key is new. */
    siteHistory?: SiteHistoryEntry[];
  }
}
