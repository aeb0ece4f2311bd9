// The capacity page of one org (#capacity/<org>, or the org typed in the panel's form): per machine type, its
// delivered, healthy, reserved and in-use machines over the last HISTORY_HOURS hours, one point per interval the
// sweep took (GET /admin/tenants/{org}/capacity/history), plotted with uPlot. The history is kept server-side, so a
// reload draws the same lines.
import uPlot from '../vendor/uplot.esm.js';
import { assign, byId, h, keyedList, place } from '../dom.js';

/** @typedef {import('../../client/api.ts').Item<'/admin/tenants/{org}/capacity/history'>} CapacityPoint */
/** @typedef {'delivered' | 'healthy' | 'reserved' | 'inUse'} Count */

const HISTORY_HOURS = 24;
const POINTS_PER_PAGE = 500;

/** The four lines of each type's chart. */
const SERIES = /** @type {const} */ ([
  { count: 'delivered', label: 'delivered', stroke: '#3a72c4' },
  { count: 'healthy', label: 'healthy', stroke: '#2e9d5b' },
  { count: 'reserved', label: 'reserved', stroke: '#7a3fb0' },
  { count: 'inUse', label: 'in use', stroke: '#d49a1f' },
]);

const selectedOrg = () => {
  const match = /^#capacity\/(.+)$/.exec(location.hash);
  return match ? decodeURIComponent(match[1] ?? '') : null;
};

/**
 * One chart's data per machine type named by any point: times (s), then machines per count. A point that does not
 * name a type had none of it then: 0.
 * @param {CapacityPoint[]} points
 */
function chartsOf(points) {
  const types = [...new Set(points.flatMap((p) => Object.keys(p.byType)))].sort();
  return types.map((type) => ({
    type,
    /** @type {uPlot.AlignedData} */
    data: [points.map((p) => Date.parse(p.at) / 1000), ...SERIES.map((s) => points.map((p) => p.byType[type]?.[s.count].machines ?? 0))],
  }));
}

/** A new chart of one type's counts in `container`. */
const chartOf = (/** @type {string} */ type, /** @type {uPlot.AlignedData} */ data, /** @type {HTMLElement} */ container) =>
  new uPlot(
    {
      title: type,
      width: 480,
      height: 200,
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
      series: [{ label: 'time' }, ...SERIES.map((s) => ({ label: s.label, stroke: s.stroke, width: 2 }))],
    },
    data,
    container,
  );

/**
 * Each chart's container carries what the chart holds (read back from the uPlot instance): `data-counts`, one array
 * per series in SERIES' order, and `data-points`, the number of points.
 * @param {import('../poll.js').PanelContext} context
 */
export function createCapacity({ api, refresh }) {
  const section = byId('capacity');
  const title = byId('capacity-title');
  const input = /** @type {HTMLInputElement} */ (byId('capacity-org'));
  const body = byId('capacity-body');
  const message = h('p', { class: 'muted', 'data-testid': 'capacity-message' });
  const charts = h('div', { class: 'capacity-charts' });
  /** @type {Map<string, { plot: uPlot, drawn: string }>} */
  const plots = new Map();
  const showCharts = keyedList(charts, {
    key: (/** @type {{ type: string }} */ c) => c.type,
    render: (c) => h('figure', { class: 'plot', 'data-testid': 'capacity-chart', 'data-type': c.type }),
  });
  /** @type {{ org: string, points?: CapacityPoint[], error?: string } | null} */
  let page = selectedOrg() ? { org: /** @type {string} */ (selectedOrg()) } : null;

  byId('capacity-form').addEventListener('submit', (event) => {
    event.preventDefault();
    if (input.value.trim()) location.hash = `#capacity/${encodeURIComponent(input.value.trim())}`;
  });
  window.addEventListener('hashchange', () => {
    const org = selectedOrg();
    if (org === null || org === page?.org) return;
    page = { org };
    plots.clear();
    section.scrollIntoView({ block: 'start' });
    refresh();
  });

  return {
    async load() {
      if (!page) return;
      const { org } = page;
      const since = new Date(Date.now() - HISTORY_HOURS * 3_600_000).toISOString();
      try {
        const points = await api.list('/admin/tenants/{org}/capacity/history', { params: { path: { org }, query: { since } } }, { limit: POINTS_PER_PAGE });
        if (page?.org === org) page = { org, points };
      } catch (error) {
        if (page?.org === org) page = { org, error: error instanceof Error ? error.message : String(error) };
      }
    },

    render() {
      assign(title, { textContent: page ? `Capacity of ${page.org}, last ${HISTORY_HOURS} hours` : 'Capacity' });
      if (page && document.activeElement !== input) assign(input, { value: page.org });
      if (!page?.points) {
        assign(message, { textContent: page ? (page.error ?? 'Loading…') : 'Name an org to see its capacity over time.' });
        place(body, [message]);
        return;
      }
      const drawn = chartsOf(page.points);
      if (drawn.length === 0) {
        assign(message, { textContent: `No capacity recorded for ${page.org} in the last ${HISTORY_HOURS} hours.` });
        place(body, [message]);
        return;
      }
      // Keyed by type alone: a chart's figure is built once, and uPlot takes its new data in place.
      showCharts(drawn.map(({ type }) => ({ type })));
      for (const { type, data } of drawn) {
        const container = /** @type {HTMLElement} */ (charts.querySelector(`[data-type="${CSS.escape(type)}"]`));
        const key = JSON.stringify(data);
        const shown = plots.get(type);
        if (shown?.drawn === key && shown.plot.root.parentElement === container) continue;
        if (shown && shown.plot.root.parentElement === container) shown.plot.setData(data);
        const plot = shown && shown.plot.root.parentElement === container ? shown.plot : chartOf(type, data, container);
        plots.set(type, { plot, drawn: key });
        container.dataset.counts = JSON.stringify(plot.data.slice(1));
        container.dataset.points = String((plot.data[0] ?? []).length);
      }
      place(body, [charts]);
    },
  };
}
