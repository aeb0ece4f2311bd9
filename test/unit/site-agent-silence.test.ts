import { describe, expect, it } from 'vitest';
import { eventCatalog } from '#domain/events/event-schemas.ts';
import { SITE_SUBJECT, siteAgentSilence } from '#domain/machines/site-agent-silence.ts';
import { addMs, iso } from '#domain/core/time.ts';
import { T0 } from '#test/support/fixtures.ts';

describe('siteAgentSilence', () => {
  const lastRosterAt = iso(T0);

  it('nothing while the last roster is within the timeout, the timeout itself included', () => {
    expect(siteAgentSilence('lab', lastRosterAt, addMs(T0, 30_000), 30)).toBeNull();
  });

  it('past the timeout: a site-level event entry whose detail is the published schema, keyed by the silence', () => {
    const now = addMs(T0, 95_500);
    const silence = siteAgentSilence('lab', lastRosterAt, now, 30)!;
    expect(silence.key).toBe(`${lastRosterAt}#agent-silent`);
    expect(silence.entry).toMatchObject({ machineId: SITE_SUBJECT, at: iso(now), action: 'event-emitted', message: 'SiteAgentSilent' });
    const detail = { ...silence.entry.event!.detail, id: '6f1c0d2e-4f7a-5e3b-9a52-c1f0e8d7b6a5' };
    expect(eventCatalog.SiteAgentSilent.detail.parse(detail)).toEqual({
      ...detail,
      site: 'lab',
      lastRosterAt,
      silentForSeconds: 95,
      timeoutSeconds: 30,
      version: 1,
      at: iso(now),
    });
    // Every later sweep of the same silence names the same entry.
    expect(siteAgentSilence('lab', lastRosterAt, addMs(now, 60_000), 30)!.key).toBe(silence.key);
  });
});
