// The audit panel: the latest provider actions (GET /admin/audit), newest first. Self-contained so the panel can
// move onto another API client without touching the rest of the dashboard.
import { h, table, time } from './dom.js';

/** How many of the latest entries the panel shows: one page, not the whole log. */
export const AUDIT_LIMIT = 50;

/** @param {ReturnType<typeof import('./api.js').createApi>} api  @returns {Promise<import('../client/api.ts').Item<'/admin/audit'>[] | null>} null: no such route */
export const loadAudit = (api) => api.optional(() => api.list('/admin/audit', {}, { limit: AUDIT_LIMIT, maxPages: 1 }));

const json = (/** @type {unknown} */ value) => (value === undefined ? '' : h('code', null, JSON.stringify(value)));

/** @param {import('../client/api.ts').Item<'/admin/audit'>[]} entries */
export function auditTable(entries) {
  return table({
    caption: `The latest ${AUDIT_LIMIT} provider actions, newest first`,
    columns: ['When', 'Actor', 'Action', 'Target', 'Before', 'After', 'Request'],
    rows: entries.map((e) => [time(e.at), e.actor, e.action, h('code', null, e.target), json(e.before), json(e.after), h('code', { class: 'muted' }, e.requestId)]),
    empty: 'No provider actions yet.',
    testid: 'audit-table',
    rowTestid: 'audit-row',
    compact: true,
  });
}
