// The audit panel: the latest provider actions (GET /admin/audit), newest first; hidden when the API has no such route.
import { assign, byId, createTable, h, place, time } from '../dom.js';

/** @import { Item } from '../../client/api.ts' */

/** How many of the latest entries the panel shows: one page, not the whole log. */
const AUDIT_LIMIT = 50;

const json = (/** @type {unknown} */ value) => (value === undefined ? '' : h('code', null, JSON.stringify(value)));

/** @param {import('../poll.js').PanelContext} context */
export function createAudit({ api }) {
  const section = byId('audit');
  const body = byId('audit-body');
  const table = createTable({
    columns: ['When', 'Actor', 'Action', 'Target', 'Before', 'After', 'Request'],
    // Entries have no id of their own; one request may act on several targets.
    key: (/** @type {Item<'/admin/audit'>} */ e) => `${e.at} ${e.requestId} ${e.action} ${e.target}`,
    cells: (e) => [time(e.at), e.actor, e.action, h('code', null, e.target), json(e.before), json(e.after), h('code', { class: 'muted' }, e.requestId)],
    testid: 'audit-table',
    rowTestid: 'audit-row',
    compact: true,
  });
  /** @type {Item<'/admin/audit'>[] | null | undefined} null: no such route */
  let entries;

  return {
    /** @param {import('../poll.js').Attempt} attempt */
    async load(attempt) {
      const read = await attempt(() => api.optional(() => api.list('/admin/audit', {}, { limit: AUDIT_LIMIT, maxPages: 1 })));
      if (read !== undefined) entries = read;
    },

    render() {
      assign(section, { hidden: !entries });
      if (!entries) return;
      table.show(entries, { caption: `The latest ${AUDIT_LIMIT} provider actions, newest first`, empty: 'No provider actions yet.' });
      place(body, [table.el]);
    },
  };
}
