// The meta-instances panel: each with its nodes, status, last error and next attempt (GET /admin/meta-instances);
// hidden when the API has no such route.
import { assign, byId, createTable, h, place, time } from '../dom.js';
import { duration, metaStatus } from '../fleet.js';

/** @import { MetaInstance } from '../fleet.js' */

/** A meta-instance as its row shows it, "in 12 s" included: the row changes when that text does. */
const rowOf = (/** @type {MetaInstance} */ m, /** @type {number | undefined} */ maxFailures, /** @type {number} */ now) => ({
  id: m.id,
  org: m.org,
  machineType: m.machineType,
  nodes: `${m.instanceIds?.length ?? 0} of ${m.minNodes}${m.placement?.sameRack ? ', same rack' : ''}`,
  badge: m.status === 'Ready' ? 'good' : m.status === 'Retrying' ? 'bad' : 'warn',
  status: metaStatus(m, maxFailures),
  error: m.lastFailureError ?? m.placementError ?? '',
  nextAttemptAt: m.nextAttemptAt,
  nextIn: m.nextAttemptAt && Date.parse(m.nextAttemptAt) > now ? ` (in ${duration(Date.parse(m.nextAttemptAt) - now)})` : '',
});

/** @param {import('../poll.js').PanelContext} context */
export function createMetaInstances({ api, store }) {
  const section = byId('meta');
  const body = byId('meta-body');
  const table = createTable({
    columns: ['Meta-instance', 'Org', 'Type', 'Nodes', 'Status', 'Last error', 'Next attempt'],
    key: (/** @type {ReturnType<typeof rowOf>} */ row) => row.id,
    cells: (row) => [
      h('code', null, row.id),
      row.org,
      row.machineType,
      row.nodes,
      h('span', { class: `badge ${row.badge}` }, row.status),
      row.error,
      row.nextAttemptAt ? h('span', null, time(row.nextAttemptAt), row.nextIn) : '',
    ],
    testid: 'meta-table',
    rowTestid: 'meta-row',
  });
  /** @type {MetaInstance[] | null | undefined} null: no such route */
  let metas;

  return {
    /** @param {import('../poll.js').Attempt} attempt */
    async load(attempt) {
      const read = await attempt(() => api.optional(() => api.list('/admin/meta-instances', {}, { limit: 500 })));
      if (read !== undefined) metas = read;
    },

    /** @param {number} now */
    render(now) {
      assign(section, { hidden: !metas });
      if (!metas) return;
      const max = store.get('config')?.config?.meta_instance?.max_consecutive_failures;
      table.show(
        metas.map((m) => rowOf(m, max, now)),
        { caption: 'Meta-instances on this site, newest first', empty: 'No meta-instances.' },
      );
      place(body, [table.el]);
    },
  };
}
