// The maintenance panel: each open maintenance as a timeline from its declaration: the hand-back deadlines (and
// whose), the waves the site agent works in (one bar per wave, from its admission to its last return), now, and the
// machines overdue (GET /admin/maintenance?state= for each open state); hidden when the API has no such route.
import { assign, byId, h, keyedList, machineLink, place, time } from '../dom.js';
import { OPEN_STATES, timelineOf } from '../maintenance-timeline.js';

/** @import { Maintenance, Timeline } from '../maintenance-timeline.js' */

const PHASE_LABELS = /** @type {const} */ ([
  ['held', 'held'],
  ['waiting', 'waiting'],
  ['in-maintenance', 'in maintenance'],
  ['validating', 'validating'],
  ['returned', 'returned'],
  ['failed', 'failed'],
]);

const stateBadge = (/** @type {string} */ state) => h('span', { class: `badge ${state === 'Halted' ? 'bad' : 'warn'}` }, state);

const waveClass = (/** @type {Timeline['waves'][number]} */ w) => (w.failed > 0 ? 'bad' : w.endedAt ? 'good' : 'warn');

/**
 * Places what sits on an axis (`data-left`, `data-width`, in %) through the CSSOM: the dashboard's CSP allows no
 * style attribute. Only values that differ are written, so a quiet refresh changes nothing.
 * @param {Element} root
 */
function position(root) {
  for (const el of root.querySelectorAll('[data-left]')) {
    const { style, dataset } = /** @type {HTMLElement} */ (el);
    if (style.left !== `${dataset.left}%`) style.left = `${dataset.left}%`;
    if (dataset.width !== undefined && style.width !== `${dataset.width}%`) style.width = `${dataset.width}%`;
  }
}

/** The axis: deadlines and now as markers, a lane per wave. */
function axis(/** @type {Timeline} */ t) {
  return h(
    'div',
    { class: 'mt-axis', 'data-testid': 'maintenance-axis' },
    h(
      'div',
      { class: 'mt-marks' },
      t.deadlines.map((d) => h('span', { class: 'mt-mark deadline', 'data-left': d.left, title: `hand back by ${d.at}`, 'data-testid': 'deadline-mark' })),
      h('span', { class: 'mt-mark now', 'data-left': t.now, title: 'now' }),
    ),
    t.waves.map((w) =>
      h(
        'div',
        { class: 'mt-lane' },
        h(
          'span',
          {
            class: `mt-wave ${waveClass(w)}`,
            'data-left': w.left,
            'data-width': w.width,
            title: `wave ${w.number}: ${w.machines} machine(s) from ${w.startedAt}${w.endedAt ? ` to ${w.endedAt}` : ', under way'}`,
            'data-testid': 'wave',
          },
          `wave ${w.number}: ${w.returned}/${w.machines} back${w.failed ? `, ${w.failed} failed` : ''}`,
        ),
      ),
    ),
    h('div', { class: 'mt-scale muted' }, h('span', null, time(t.span.from)), h('span', null, time(t.span.to))),
  );
}

function render(/** @type {Timeline} */ t) {
  return h(
    'article',
    { class: 'maintenance', 'data-testid': 'maintenance-item', 'data-maintenance': t.id },
    h('h3', null, h('code', null, t.id), ' ', t.title, ' ', stateBadge(t.state)),
    h('p', { class: 'muted' }, t.reason),
    h(
      'dl',
      { class: 'facts' },
      h('dt', null, 'Machines'),
      h(
        'dd',
        { 'data-testid': 'maintenance-phases' },
        PHASE_LABELS.filter(([p]) => t.phases[p]).map(([p, label], i) => `${i > 0 ? ', ' : ''}${t.phases[p]} ${label}`),
      ),
      h('dt', null, 'Waves'),
      h('dd', null, `${t.inFlight}${t.earlierWaves ? `; ${t.earlierWaves} earlier wave(s) not drawn` : ''}`),
      h('dt', null, 'Hand back by'),
      h(
        'dd',
        { 'data-testid': 'deadlines' },
        t.deadlines.map((d, i) => [
          i > 0 ? '; ' : '',
          time(d.at),
          d.orgs.length > 0 ? ` (${d.orgs.join(', ')}: ${d.held} still held)` : ` (${d.held} still held)`,
        ]),
      ),
    ),
    axis(t),
    t.overdue.length > 0
      ? h(
          'table',
          { 'data-testid': 'overdue-table' },
          h('caption', null, 'Overdue: not back within the window'),
          h(
            'thead',
            null,
            h(
              'tr',
              null,
              ['Machine', 'Phase', 'Due back'].map((c) => h('th', { scope: 'col' }, c)),
            ),
          ),
          h(
            'tbody',
            null,
            t.overdue.map((o) => h('tr', null, h('td', null, machineLink(o.machineId)), h('td', null, o.phase), h('td', null, time(o.dueAt)))),
          ),
        )
      : '',
  );
}

/** @param {import('../poll.js').PanelContext} context */
export function createMaintenance({ api }) {
  const section = byId('maintenance');
  const body = byId('maintenance-body');
  const empty = h('p', { class: 'muted', 'data-testid': 'no-maintenance' }, 'No open maintenance.');
  const list = h('div', { class: 'maintenance-list' });
  const show = keyedList(list, { key: (/** @type {Timeline} */ t) => t.id, render });
  /** @type {Maintenance[] | null | undefined} null: no such route */
  let open;

  return {
    /** @param {import('../poll.js').Attempt} attempt */
    async load(attempt) {
      const read = await attempt(() =>
        api.optional(async () =>
          (await Promise.all(OPEN_STATES.map((state) => api.list('/admin/maintenance', { params: { query: { state } } }, { limit: 50, maxPages: 1 })))).flat(),
        ),
      );
      if (read !== undefined) open = read === null ? null : read.sort((a, b) => b.createdAt.localeCompare(a.createdAt));
    },

    /** @param {number} now */
    render(now) {
      assign(section, { hidden: !open });
      if (!open) return;
      show(open.map((m) => timelineOf(m, now)));
      position(list);
      place(body, [open.length > 0 ? list : empty]);
    },
  };
}
