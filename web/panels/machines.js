// The machines panel: one page of the fleet's machines, filtered and paged by the server
// (GET /admin/machines?state=&machineType=&healthOverride=&allocatable=&limit=&nextToken=).
import { assign, byId, createTable, h, machineLink, place } from '../dom.js';
import { SOURCES } from '../fleet.js';
import { labelList } from '../machine-parts.js';

/** @import { Answer } from '../../client/api.ts' */
/** @import { Machine } from '../fleet.js' */

/** Rows per page. */
const MACHINE_PAGE = 500;

/** A machine as its row shows it: not its heartbeat nor version, which change all the time and are not shown. */
const rowOf = (/** @type {Machine} */ m) => ({
  id: m.id,
  machineType: m.machineType,
  rack: m.rack,
  state: m.state,
  allocatable: m.allocatable,
  notAllocatableReasons: m.notAllocatableReasons,
  // The agent's alerts are named on hover of its override: which probe failed, without opening the machine.
  overrides: m.healthOverrides.map((o) => ({
    source: o.source,
    alerts: o.source === SOURCES.hardwareHealth ? o.alerts.map((a) => a.id).join(', ') : undefined,
  })),
  instanceId: m.instanceId,
  labels: m.labels,
});

/** @param {ReturnType<typeof rowOf>} row */
const cells = (row) => [
  machineLink(row.id),
  row.machineType,
  row.rack,
  row.state,
  row.allocatable ? 'yes' : h('span', { title: row.notAllocatableReasons.join(', ') }, 'no'),
  row.overrides.length
    ? row.overrides.map((o, i) => [
        i > 0 ? ' ' : '',
        h('code', { class: o.alerts === undefined ? 'source' : 'source hardware-health', title: o.alerts }, o.source),
      ])
    : h('span', { class: 'muted' }, 'none'),
  row.instanceId ? h('code', null, row.instanceId) : '',
  labelList(row.labels),
];

/** @param {import('../poll.js').PanelContext} context */
export function createMachines({ api, refresh }) {
  const form = byId('machine-filters');
  const previous = /** @type {HTMLButtonElement} */ (byId('page-previous'));
  const next = /** @type {HTMLButtonElement} */ (byId('page-next'));
  const body = byId('machines-body');
  const table = createTable({
    columns: ['Machine', 'Type', 'Rack', 'State', 'Allocatable', 'Health overrides', 'Instance', 'Labels'],
    key: (/** @type {ReturnType<typeof rowOf>} */ row) => row.id,
    cells,
    testid: 'machines-table',
    compact: true,
  });
  /** @type {Answer<'/admin/machines', 'get'> | undefined} */
  let page;
  /** The tokens of the pages before the one shown, for "Previous"; the last is the shown page's own token. */
  /** @type {Array<string | undefined>} */
  let pageTokens = [undefined];

  /** Another page or other filters: the table follows at once, the rest of the dashboard keeps its rhythm. */
  const showPage = (/** @type {Array<string | undefined>} */ tokens) => {
    pageTokens = tokens;
    refresh();
  };
  form.addEventListener('change', () => showPage([undefined]));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    showPage([undefined]);
  });
  next.addEventListener('click', () => showPage([...pageTokens, page?.nextToken]));
  previous.addEventListener('click', () => showPage(pageTokens.slice(0, -1)));

  /** The query: the filters (form fields) and the page shown. */
  function query() {
    const value = (/** @type {string} */ id) => /** @type {HTMLInputElement | HTMLSelectElement} */ (byId(id)).value.trim() || undefined;
    const state = /** @type {'Ready' | 'Assigned' | 'Cleanup' | undefined} */ (value('filter-state'));
    const allocatable = /** @type {'true' | 'false' | undefined} */ (value('filter-allocatable'));
    const nextToken = pageTokens.at(-1);
    return { limit: MACHINE_PAGE, state, machineType: value('filter-type'), healthOverride: value('filter-override'), allocatable, nextToken };
  }

  return {
    /** @param {import('../poll.js').Attempt} attempt */
    async load(attempt) {
      const read = await attempt(() => api.get('/admin/machines', { params: { query: query() } }));
      if (read !== undefined) page = read;
    },

    render() {
      if (!page) return;
      const q = query();
      const filters = [q.state, q.machineType, q.healthOverride, q.allocatable && `allocatable=${q.allocatable}`].filter(Boolean);
      table.show(page.items.map(rowOf), {
        caption: `Machines${filters.length ? ` (${filters.join(', ')})` : ''}, page ${pageTokens.length}: ${page.items.length} shown`,
        // The server filters each page: a page may hold few matches, or none, with more on the next.
        empty: page.nextToken ? 'No match on this page; try the next one.' : filters.length ? 'No machine matches.' : 'No machines registered.',
      });
      place(body, [table.el]);
      assign(previous, { disabled: pageTokens.length === 1 });
      assign(next, { disabled: !page.nextToken });
    },
  };
}
