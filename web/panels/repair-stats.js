// The repair-stats panel: quarantines and repair outcomes per UTC day, and time to repair, over the last
// STATS_DAYS days (GET /admin/fleet/repair-stats), plotted with uPlot; hidden when the API has no such route.
import uPlot from '../vendor/uplot.esm.js';
import { assign, byId, h, view } from '../dom.js';

/** @typedef {import('../../client/api.ts').Answer<'/admin/fleet/repair-stats', 'get'>} RepairStats */

const STATS_DAYS = 30;
const HALF_DAY_S = 43_200;

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

/** @param {RepairStats} stats @returns {uPlot.AlignedData} */
const seriesOf = (stats, /** @type {typeof plots[number]} */ plot) => [
  stats.days.map((d) => Date.parse(`${d.day}T00:00:00Z`) / 1000),
  ...plot.series.map((s) => stats.days.map(s.of)),
];

const minutes = (/** @type {number | undefined} */ value) => (value === undefined ? '–' : `${value} min`);

/** A new chart of `plot` in `container`. */
const chartOf = (/** @type {typeof plots[number]} */ plot, /** @type {uPlot.AlignedData} */ data, /** @type {HTMLElement} */ container) =>
  new uPlot(
    {
      width: 480,
      height: 180,
      // Half a day either side, so the first and last days' bars are drawn whole.
      scales: { x: { time: true, range: (_u, min, max) => [min - HALF_DAY_S, max + HALF_DAY_S] }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
      axes: [{}, { incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000] }],
      series: [
        { label: 'day (UTC)', value: (_u, v) => (v == null ? '' : new Date(v * 1000).toISOString().slice(0, 10)) },
        ...plot.series.map((s) => ({ label: s.label, stroke: s.stroke, fill: s.fill, paths: uPlot.paths.bars?.({ size: [0.8, 40] }) })),
      ],
    },
    data,
    container,
  );

/**
 * Each chart's container carries the counts the chart holds (read back from the uPlot instance) in `data-counts`,
 * one array per series, and the number of days in `data-days`, so what is plotted can be checked.
 * @param {import('../poll.js').PanelContext} context
 */
export function createRepairStats({ api }) {
  const section = byId('repair-stats');
  const ttr = h('div', { class: 'ttr', 'data-testid': 'time-to-repair' });
  const showTtr = view(ttr, (/** @type {{ ttr: RepairStats['timeToRepairMinutes'], days: number }} */ { ttr: t, days }) =>
    h(
      'div',
      { class: 'ttr', 'data-testid': 'time-to-repair' },
      h('span', { 'data-testid': 'ttr-median' }, `median ${minutes(t.median)}`),
      h('span', { 'data-testid': 'ttr-p90' }, `p90 ${minutes(t.p90)}`),
      h('span', { class: 'muted', 'data-testid': 'ttr-count' }, `time to repair over ${t.count} repairs, last ${days} days (UTC)`),
    ),
  );
  const charts = plots.map((plot) => ({
    plot,
    container: h('div', { 'data-testid': plot.testid }),
    /** @type {uPlot | undefined} */ chart: undefined,
    drawn: '',
  }));
  byId('repair-stats-body').replaceChildren(ttr, ...charts.map((c) => h('figure', { class: 'plot' }, h('figcaption', null, c.plot.title), c.container)));
  /** @type {RepairStats | null | undefined} null: no such route */
  let stats;

  return {
    /** @param {import('../poll.js').Attempt} attempt */
    async load(attempt) {
      const read = await attempt(() => api.optional(() => api.get('/admin/fleet/repair-stats', { params: { query: { days: STATS_DAYS } } })));
      if (read !== undefined) stats = read;
    },

    render() {
      assign(section, { hidden: !stats });
      if (!stats) return;
      showTtr({ ttr: stats.timeToRepairMinutes, days: stats.days.length });
      for (const c of charts) {
        const data = seriesOf(stats, c.plot);
        const key = JSON.stringify(data);
        if (c.drawn === key) continue;
        c.drawn = key;
        if (c.chart) c.chart.setData(data);
        else c.chart = chartOf(c.plot, data, c.container);
        c.container.dataset.counts = JSON.stringify(c.chart.data.slice(1));
        c.container.dataset.days = String((c.chart.data[0] ?? []).length);
        c.container.title = `${c.plot.title}, the last ${stats.days.length} days (UTC)`;
      }
    },
  };
}
