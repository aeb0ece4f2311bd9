// The fleet panel: machines, allocatable, not allocatable and heartbeat stale; counts by state, by health-override
// source and by machine type (GET /admin/fleet/summary, shared as `summary`).
import { byId, createTable, h, place, tileList } from '../dom.js';
import { fleetCounts } from '../fleet.js';

const byName = (/** @type {[string, unknown]} */ [a], /** @type {[string, unknown]} */ [b]) => a.localeCompare(b);

/** @param {import('../poll.js').PanelContext} context */
export function createFleetSummary({ api, store }) {
  const stats = h('div', { class: 'stats' });
  const showStats = tileList(stats, 'div', 'stat');
  const byState = createTable({
    columns: ['State', 'Machines'],
    key: (/** @type {[string, number]} */ [state]) => state,
    cells: ([state, n]) => [state, n],
    testid: 'by-state',
  });
  const byOverride = createTable({
    columns: ['Override source', 'Machines'],
    key: (/** @type {[string, number]} */ [source]) => source,
    cells: ([source, n]) => [h('code', null, source), n],
    testid: 'by-override',
  });
  const byType = createTable({
    columns: ['Type', 'Machines', 'Allocatable'],
    key: (/** @type {[string, { total: number, allocatable: number }]} */ [type]) => type,
    cells: ([type, c]) => [type, c.total, c.allocatable],
    testid: 'by-type',
  });
  const body = byId('fleet-body');
  const layout = [stats, h('div', { class: 'columns' }, byState.el, byOverride.el, byType.el)];

  return {
    /** @param {import('../poll.js').Attempt} attempt */
    async load(attempt) {
      const summary = await attempt(() => api.get('/admin/fleet/summary'));
      if (summary !== undefined) store.set('summary', summary);
    },

    render() {
      const summary = store.get('summary');
      if (!summary) return;
      const counts = fleetCounts(summary);
      showStats([
        { testid: 'total-count', label: 'machines', value: counts.total },
        { testid: 'allocatable-count', label: 'allocatable', value: counts.allocatable },
        { testid: 'not-allocatable-count', label: 'not allocatable', value: counts.total - counts.allocatable },
        { testid: 'stale-count', label: 'heartbeat stale', value: counts.stale },
      ]);
      byState.show(Object.entries(counts.byState), { caption: 'By state' });
      byOverride.show(Object.entries(counts.byOverride).sort(byName), { caption: 'By health override', empty: 'No machine has a health override.' });
      byType.show(Object.entries(counts.byType).sort(byName), { caption: 'By machine type' });
      place(body, layout);
    },
  };
}
