// The repair-stats panel: quarantines and repair outcomes per UTC day, and time to repair, over the last
// STATS_DAYS days (GET /admin/fleet/repair-stats), plotted with uPlot. Self-contained like audit.js.
import uPlot from './vendor/uplot.esm.js';
import { h } from './dom.js';

/** @typedef {import('../client/api.ts').Answer<'/admin/fleet/repair-stats', 'get'>} RepairStats */

export const STATS_DAYS = 30;
const HALF_DAY_S = 43_200;

/** @param {ReturnType<typeof import('./api.js').createApi>} api  @returns {Promise<RepairStats | null>} null: no such route */
export const loadRepairStats = (api) => api.optional(() => api.get('/admin/fleet/repair-stats', { params: { query: { days: STATS_DAYS } } }));

/** The plots, each with its counts from the stats; `testid` names the chart's container. */
const plots = [
  {
    testid: 'plot-quarantines',
    title: 'Quarantines per day',
    series: [{ label: 'quarantined', stroke: '#c62828', fill: 'rgba(198, 40, 40, 0.25)', of: (/** @type {RepairStats['days'][number]} */ d) => d.quarantined }],
  },
  {
    testid: 'plot-repairs',
    title: 'Repairs per day',
    series: [
      { label: 'completed', stroke: '#2e7d32', fill: 'rgba(46, 125, 50, 0.25)', of: (/** @type {RepairStats['days'][number]} */ d) => d.repairsCompleted },
      { label: 'failed', stroke: '#ef6c00', fill: 'rgba(239, 108, 0, 0.25)', of: (/** @type {RepairStats['days'][number]} */ d) => d.repairsFailed },
    ],
  },
];

/** The charts drawn so far, by testid: a refresh gives them new data instead of drawing them again. */
/** @type {Map<string, { chart: uPlot, container: HTMLElement, key: string }>} */
const charts = new Map();

/** @param {RepairStats} stats @returns {uPlot.AlignedData} */
const seriesOf = (stats, /** @type {typeof plots[number]} */ plot) => [
  stats.days.map((d) => Date.parse(`${d.day}T00:00:00Z`) / 1000),
  ...plot.series.map((s) => stats.days.map(s.of)),
];

/**
 * Draws or updates the plots in `body`. Each chart's container carries the counts the chart holds (read back from
 * the uPlot instance) in `data-counts`, one array per series, so what is plotted can be checked.
 * @param {HTMLElement} body @param {RepairStats} stats
 */
export function renderRepairStats(body, stats) {
  if (charts.size === 0) body.replaceChildren(h('div', { class: 'ttr', 'data-testid': 'time-to-repair' }), ...plots.map((p) => h('figure', { class: 'plot' }, h('figcaption', null, p.title), h('div', { 'data-testid': p.testid }))));
  const ttr = stats.timeToRepairMinutes;
  const minutes = (/** @type {number | undefined} */ value) => (value === undefined ? '–' : `${value} min`);
  /** @type {HTMLElement} */ (body.querySelector('[data-testid="time-to-repair"]')).replaceChildren(
    h('span', { 'data-testid': 'ttr-median' }, `median ${minutes(ttr.median)}`),
    h('span', { 'data-testid': 'ttr-p90' }, `p90 ${minutes(ttr.p90)}`),
    h('span', { class: 'muted', 'data-testid': 'ttr-count' }, `time to repair over ${ttr.count} repairs, last ${stats.days.length} days (UTC)`),
  );
  for (const plot of plots) {
    const data = seriesOf(stats, plot);
    const key = JSON.stringify(data);
    let drawn = charts.get(plot.testid);
    if (drawn?.key === key) continue;
    if (drawn) drawn.chart.setData(data);
    else {
      const container = /** @type {HTMLElement} */ (body.querySelector(`[data-testid="${plot.testid}"]`));
      const chart = new uPlot(
        {
          width: 480,
          height: 180,
          // Half a day either side, so the first and last days' bars are drawn whole.
          scales: { x: { time: true, range: (_u, min, max) => [min - HALF_DAY_S, max + HALF_DAY_S] }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
          axes: [{}, { incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000] }],
          series: [{ label: 'day (UTC)', value: (_u, v) => (v == null ? '' : new Date(v * 1000).toISOString().slice(0, 10)) }, ...plot.series.map((s) => ({ label: s.label, stroke: s.stroke, fill: s.fill, paths: uPlot.paths.bars?.({ size: [0.8, 40] }) }))],
        },
        data,
        container,
      );
      drawn = { chart, container, key };
      charts.set(plot.testid, drawn);
    }
    drawn.key = key;
    drawn.container.dataset.counts = JSON.stringify(drawn.chart.data.slice(1));
    drawn.container.dataset.days = String((drawn.chart.data[0] ?? []).length);
    drawn.container.title = `${plot.title}, the last ${stats.days.length} days (UTC)`;
  }
}
