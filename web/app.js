// The Fleetward dashboard: reads the HTTP API every REFRESH_MS and renders what it finds. Plain ES modules.
import { ApiError, SignInNeeded, apiBaseUrl, createApi } from './api.js';
import { auditTable, loadAudit } from './audit.js';
import { loadRepairStats, renderRepairStats } from './repair-stats.js';
import { h, machineLink, table, time } from './dom.js';
import { RECENT_MS, duration, fleetCounts, issueOf, PIPELINE_SOURCES, issueText, latestOutcome, metaStatus, outcomeCandidates, override, pipeline, since, SOURCES } from './fleet.js';

/** @import { Answer, Item } from '../client/api.ts' */
/** @import { HistoryEntry, Machine, MetaInstance } from './fleet.js' */

const REFRESH_MS = 2000;
/** Rows per page of the machine table. */
const MACHINE_PAGE = 500;
const HISTORY_LIMIT = 100;
const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));

/** What the last refreshes found. `undefined`: never loaded; `null`: the API has no such route (panel hidden). */
const state = {
  /** @type {Answer<'/admin/config', 'get'> | undefined} */ config: undefined,
  /** @type {Answer<'/admin/fleet/summary', 'get'> | undefined} */ summary: undefined,
  /** Machines with a repair-pipeline override (three filtered listings), not the whole fleet. @type {Machine[] | undefined} */ machines: undefined,
  /** One page of the machine table, filtered and paged by the server. @type {Answer<'/admin/machines', 'get'> | undefined} */ machinePage: undefined,
  /** The tokens of the pages before the one shown, for "Previous"; the last is the shown page's own token. @type {Array<string | undefined>} */ pageTokens: [undefined],
  /** @type {MetaInstance[] | null | undefined} */ metas: undefined,
  /** The rack map's type and its racks, each machine a compact entry. @type {{ machineType: string, racks: Item<'/admin/fleet/racks'>[] } | undefined} */ racks: undefined,
  /** @type {Answer<'/admin/safety', 'get'> | null | undefined} */ safety: undefined,
  /** @type {Item<'/admin/repairs'>[] | null | undefined} */ stuck: undefined,
  /** @type {Item<'/admin/audit'>[] | null | undefined} */ audit: undefined,
  /** @type {Answer<'/admin/fleet/repair-stats', 'get'> | null | undefined} */ repairStats: undefined,
  /**
   * Repair outcomes found in machine histories, by machine id, with the machine version they were read at.
   * @type {Map<string, { version: number, outcome: ReturnType<typeof latestOutcome> }>}
   */
  outcomes: new Map(),
  /** @type {{ id: string, machine?: Machine, history?: HistoryEntry[], error?: string } | null} */ detail: null,
  /** @type {Date | null} */ lastOk: null,
  /** @type {Date | null} */ lastTry: null,
  /** @type {string[]} */ errors: [],
  refreshes: 0,
};

/** @type {ReturnType<typeof createApi>} */
let api;
/** @type {ReturnType<typeof setTimeout> | undefined} */
let timer;
let running = false;
/** A refresh asked for while one was running (a machine was clicked): run it right after. */
let again = false;

// ---- refresh ---------------------------------------------------------------------------------------------------

async function refresh() {
  clearTimeout(timer);
  if (running) {
    again = true;
    return;
  }
  running = true;
  again = false;
  /** @type {string[]} */
  const errors = [];
  /** Runs one read; a failure is recorded and shown, and the panel keeps its last data. */
  /**
   * @template T
   * @param {() => Promise<T>} read
   * @returns {Promise<T | undefined>}
   */
  const attempt = async (read) => {
    try {
      return await read();
    } catch (error) {
      if (error instanceof SignInNeeded) throw error;
      errors.push(error instanceof Error ? error.message : String(error));
      return undefined;
    }
  };
  try {
    state.lastTry = new Date();
    const [config, summary, machinePage, machines, metas, safety, stuck, audit, repairStats] = await Promise.all([
      state.config ?? attempt(() => api.get('/admin/config')),
      attempt(() => api.get('/admin/fleet/summary')),
      attempt(() => api.get('/admin/machines', { params: { query: machineQuery() } })),
      attempt(() => loadPipelineMachines()),
      attempt(() => api.optional(() => api.list('/admin/meta-instances', {}, { limit: 500 }))),
      attempt(() => api.optional(() => api.get('/admin/safety'))),
      attempt(() => api.optional(() => api.list('/admin/repairs', { params: { query: { stuck: 'true' } } }))),
      attempt(() => loadAudit(api)),
      attempt(() => loadRepairStats(api)),
      loadDetail(errors),
    ]);
    if (config !== undefined) state.config = config;
    if (summary !== undefined) state.summary = summary;
    const racks = await attempt(() => loadRacks());
    if (racks !== undefined) state.racks = racks;
    if (machinePage !== undefined) state.machinePage = machinePage;
    if (machines !== undefined) {
      const left = (state.machines ?? []).filter((m) => !machines.some((now) => now.id === m.id));
      state.machines = machines;
      await attempt(() => loadOutcomes(machines, left));
    }
    if (metas !== undefined) state.metas = metas;
    if (safety !== undefined) state.safety = safety;
    if (stuck !== undefined) state.stuck = stuck;
    if (audit !== undefined) state.audit = audit;
    if (repairStats !== undefined) state.repairStats = repairStats;
    state.errors = errors;
    if (errors.length === 0) state.lastOk = new Date();
    state.refreshes += 1;
    showMain();
    render();
  } catch (error) {
    if (error instanceof SignInNeeded) return showLogin(error.message);
    state.errors = [String(error)];
    renderStatus();
  } finally {
    running = false;
  }
  timer = setTimeout(refresh, again ? 0 : REFRESH_MS);
}

/**
 * The repair pipeline's machines: one listing per override it shows (the repair-request one reads its own index),
 * so the dashboard never pages through the whole fleet.
 */
async function loadPipelineMachines() {
  const lists = await Promise.all(PIPELINE_SOURCES.map((healthOverride) => api.list('/admin/machines', { params: { query: { healthOverride } } }, { limit: 500 })));
  return [...new Map(lists.flat().map((m) => [m.id, m])).values()];
}

/** The racks of the type chosen for the rack map (the first type until one is chosen), from the per-rack aggregates. */
async function loadRacks() {
  const types = Object.keys(state.summary?.byType ?? {}).sort();
  const chosen = /** @type {HTMLSelectElement} */ ($('rack-type')).value;
  const machineType = types.includes(chosen) ? chosen : types[0];
  if (!machineType) return undefined;
  return { machineType, racks: await api.list('/admin/fleet/racks', { params: { query: { machineType } } }, { limit: 100 }) };
}

/** The machine table's query: its filters (form fields) and the page shown. */
function machineQuery() {
  const value = (/** @type {string} */ id) => /** @type {HTMLInputElement | HTMLSelectElement} */ ($(id)).value.trim() || undefined;
  const state_ = /** @type {'Ready' | 'Assigned' | 'Cleanup' | undefined} */ (value('filter-state'));
  const allocatable = /** @type {'true' | 'false' | undefined} */ (value('filter-allocatable'));
  return { limit: MACHINE_PAGE, state: state_, machineType: value('filter-type'), healthOverride: value('filter-override'), allocatable, nextToken: state.pageTokens.at(-1) };
}

/**
 * Read the history of machines that may have a recent repair outcome, once per machine version; and of machines
 * that just left the pipeline (a completed repair leaves no override behind), once.
 */
async function loadOutcomes(/** @type {Machine[]} */ machines, /** @type {Machine[]} */ left) {
  const stale = [...outcomeCandidates(machines).filter((m) => state.outcomes.get(m.id)?.version !== m.version), ...left];
  // A few at a time: after a storm there may be many.
  for (let i = 0; i < stale.length; i += 8) {
    await Promise.all(
      stale.slice(i, i + 8).map(async (m) => {
        const history = await api.list('/admin/machines/{id}/history', { params: { path: { id: m.id } } }, { limit: 50, maxPages: 1 });
        state.outcomes.set(m.id, { version: m.version, outcome: latestOutcome(history) });
      }),
    );
  }
}

/** The machine chosen in the URL (#machine/<id>): its record and its newest history entries. */
async function loadDetail(/** @type {string[]} */ errors) {
  const id = selectedMachine();
  if (!id) {
    state.detail = null;
    return;
  }
  const params = { path: { id } };
  try {
    const [machine, history] = await Promise.all([
      api.get('/admin/machines/{id}', { params }),
      api.list('/admin/machines/{id}/history', { params }, { limit: HISTORY_LIMIT, maxPages: 1 }),
    ]);
    if (selectedMachine() === id) state.detail = { id, machine, history };
  } catch (error) {
    if (error instanceof SignInNeeded) throw error;
    if (error instanceof ApiError && error.status === 404) state.detail = { id, error: `No machine ${id} on this site.` };
    else {
      errors.push(error instanceof Error ? error.message : String(error));
      if (state.detail?.id !== id) state.detail = { id, error: 'Could not load this machine; see the error above.' };
    }
  }
}

function selectedMachine() {
  const match = /^#machine\/(.+)$/.exec(location.hash);
  return match ? decodeURIComponent(match[1] ?? '') : null;
}

// ---- render ----------------------------------------------------------------------------------------------------

function render() {
  renderStatus();
  if (!state.machines || !state.summary) return;
  const now = Date.now();
  renderFleet(state.summary);
  renderRackMap();
  renderPipeline(state.machines, now);
  renderSafety(now);
  renderDetail(now);
  renderMetas(now);
  renderMachines();
  renderAudit();
  renderStats();
}

function renderStats() {
  $('repair-stats').hidden = !state.repairStats;
  if (state.repairStats) renderRepairStats($('repair-stats-body'), state.repairStats);
}

function renderAudit() {
  $('audit').hidden = !state.audit;
  if (state.audit) $('audit-body').replaceChildren(auditTable(state.audit));
}

function renderStatus() {
  const status = $('refresh-status');
  status.dataset.refreshes = String(state.refreshes);
  const every = `refreshes every ${REFRESH_MS / 1000} s`;
  if (state.errors.length > 0) {
    status.className = 'status stale';
    status.textContent = state.lastOk
      ? `Refresh failed at ${state.lastTry?.toLocaleTimeString()}; showing data from ${state.lastOk.toLocaleTimeString()} (${every})`
      : `Refresh failed at ${state.lastTry?.toLocaleTimeString()} (${every})`;
  } else if (state.lastOk) {
    status.className = 'status';
    status.textContent = `Last refreshed ${state.lastOk.toLocaleTimeString()} (${every})`;
  }
  const errors = $('errors');
  errors.hidden = state.errors.length === 0;
  errors.replaceChildren(...state.errors.map((e) => h('p', null, e)));
  const name = state.config?.config?.site?.name;
  $('site-name').textContent = name ? `· site ${name}${state.config?.version ? ` · ${state.config.version}` : ''}` : '';
}

const stat = (/** @type {string} */ label, /** @type {unknown} */ value, /** @type {string} */ testid) => h('div', { class: 'stat', 'data-testid': testid }, h('span', { class: 'value' }, value), h('span', { class: 'label' }, label));

function renderFleet(/** @type {Answer<'/admin/fleet/summary', 'get'>} */ summary) {
  const counts = fleetCounts(summary);
  const overrides = Object.entries(counts.byOverride).sort(([a], [b]) => a.localeCompare(b));
  $('fleet-body').replaceChildren(
    h(
      'div',
      { class: 'stats' },
      stat('machines', counts.total, 'total-count'),
      stat('allocatable', counts.allocatable, 'allocatable-count'),
      stat('not allocatable', counts.total - counts.allocatable, 'not-allocatable-count'),
      stat('heartbeat stale', counts.stale, 'stale-count'),
    ),
    h(
      'div',
      { class: 'columns' },
      table({
        caption: 'By state',
        columns: ['State', 'Machines'],
        rows: Object.entries(counts.byState).map(([s, n]) => [s, n]),
        testid: 'by-state',
      }),
      table({
        caption: 'By health override',
        columns: ['Override source', 'Machines'],
        rows: overrides.map(([source, n]) => [h('code', null, source), n]),
        empty: 'No machine has a health override.',
        testid: 'by-override',
      }),
      table({
        caption: 'By machine type',
        columns: ['Type', 'Machines', 'Allocatable'],
        rows: Object.entries(counts.byType)
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([type, c]) => [type, c.total, c.allocatable]),
        testid: 'by-type',
      }),
    ),
  );
}

/** Last rack map drawn, so an unchanged map is not rebuilt every refresh (10,000 cells). */
let drawnRacks = '';

function renderRackMap() {
  const select = /** @type {HTMLSelectElement} */ ($('rack-type'));
  const types = Object.keys(state.summary?.byType ?? {}).sort();
  if ([...select.options].map((o) => o.value).join() !== types.join()) {
    select.replaceChildren(...types.map((t) => h('option', { value: t }, t)));
    if (state.racks) select.value = state.racks.machineType;
  }
  const stuck = new Set((state.stuck ?? []).map((s) => s.machineId));
  const drawn = JSON.stringify([state.racks, [...stuck]]);
  if (!state.racks || drawn === drawnRacks) return;
  drawnRacks = drawn;
  const racks = [...state.racks.racks].sort((a, b) => a.rack.localeCompare(b.rack, undefined, { numeric: true }));
  $('racks-body').replaceChildren(
    racks.length === 0
      ? h('p', { class: 'muted' }, 'No racks recorded for this type yet.')
      : h(
          'div',
          { class: 'rack-map' },
          racks.map((rack) => {
            const machines = Object.entries(rack.machines).sort(([a], [b]) => a.localeCompare(b, undefined, { numeric: true }));
            return h(
              'div',
              { class: 'rack', 'data-testid': 'rack', 'data-rack': rack.rack },
              h('span', { class: 'rack-name' }, rack.rack),
              h(
                'span',
                { class: 'cells' },
                machines.map(([id, m]) =>
                  h('a', {
                    href: `#machine/${encodeURIComponent(id)}`,
                    class: [
                      'cell',
                      `state-${m.state}`,
                      m.quarantined && 'quarantined',
                      m.overrides.includes(SOURCES.outForRepair) && 'out-for-repair',
                      m.overrides.includes(SOURCES.hardwareHealth) && 'hardware-health',
                      stuck.has(id) && 'stuck',
                    ]
                      .filter(Boolean)
                      .join(' '),
                    'data-machine': id,
                    title: `${id} · ${m.state}${m.overrides.length ? ` · ${m.overrides.join(', ')}` : ''}${stuck.has(id) ? ' · stuck repair' : ''}`,
                    'aria-label': id,
                  }),
                ),
              ),
            );
          }),
        ),
  );
}

const issueCell = (/** @type {HistoryEntry["issue"]} */ issue) =>
  issue ? h('span', { class: 'issue', title: issue.details ?? '' }, h('span', { class: 'category' }, issue.category), ' ', issue.summary) : h('span', { class: 'muted' }, 'none given');

function renderPipeline(/** @type {Machine[]} */ machines, /** @type {number} */ now) {
  const p = pipeline(machines);
  const heldBack = new Set(state.safety?.repairStorm?.heldBack ?? []);
  const recent = [...state.outcomes.values()]
    .map((o) => o.outcome)
    .filter((o) => o !== null)
    .filter((o) => now - Date.parse(o.at) <= RECENT_MS)
    .sort((a, b) => b.at.localeCompare(a.at));
  const stuckById = new Map((state.stuck ?? []).map((s) => [s.machineId, s]));
  const stage = (/** @type {string} */ title, /** @type {number} */ n, /** @type {string} */ testid) =>
    h('span', { class: 'stage', 'data-testid': `${testid}-count` }, h('span', { class: 'value' }, n), h('span', { class: 'label' }, title));

  const stuckFlag = (/** @type {Machine} */ m) => (stuckById.has(m.id) ? h('span', { class: 'badge bad' }, 'stuck') : null);
  $('pipeline-body').replaceChildren(
    h(
      'div',
      { class: 'stages', 'aria-label': 'Machines at each stage' },
      stage('quarantined', p.quarantined.length, 'quarantined'),
      stage('waiting for a repair tenant', p.waiting.length, 'waiting'),
      stage('in repair', p.inRepair.length, 'in-repair'),
      stage('out for repair', p.outForRepair.length, 'out-for-repair'),
      stage('completed or failed, last 24 h', recent.length, 'outcomes'),
    ),
    table({
      caption: 'Quarantined: reported by a tenant, no repair requested',
      columns: ['Machine', 'Issue', 'Reported', 'By', 'Note'],
      rows: p.quarantined.map((m) => {
        const o = override(m, SOURCES.reported);
        return [
          machineLink(m.id),
          issueCell(o?.issue),
          h('span', null, time(o?.createdAt), h('span', { class: 'muted' }, ` (${since(o?.createdAt, now)} ago)`)),
          o?.createdBy ?? '',
          heldBack.has(m.id) ? h('span', { class: 'badge warn' }, 'repair request held back by the storm breaker') : '',
        ];
      }),
      empty: 'No machine is quarantined without a repair request.',
      testid: 'pipeline-quarantined',
      rowTestid: 'pipeline-row',
    }),
    table({
      caption: 'Waiting for a repair tenant: repair requested, not claimed yet',
      columns: ['Machine', 'Issue', 'Waiting for', 'Requested', 'State'],
      rows: p.waiting.map((m) => {
        const o = override(m, SOURCES.repairRequest);
        return [machineLink(m.id), issueCell(issueOf(m)), h('span', null, since(o?.createdAt, now), ' ', stuckFlag(m)), time(o?.createdAt), m.state];
      }),
      empty: 'No repair request is waiting.',
      testid: 'pipeline-waiting',
      rowTestid: 'pipeline-row',
    }),
    table({
      caption: 'In repair: claimed by a repair tenant',
      columns: ['Machine', 'Issue', 'repair_status', 'repair_eta', 'Instance', 'Requested'],
      rows: p.inRepair.map((m) => {
        const o = override(m, SOURCES.repairRequest);
        return [
          machineLink(m.id),
          issueCell(issueOf(m)),
          h('span', null, m.labels.repair_status ?? h('span', { class: 'muted' }, 'not set'), ' ', stuckFlag(m)),
          m.labels.repair_eta ?? '',
          h('code', null, m.instanceId),
          h('span', null, time(o?.createdAt), h('span', { class: 'muted' }, ` (${since(o?.createdAt, now)} ago)`)),
        ];
      }),
      empty: 'No machine is in repair.',
      testid: 'pipeline-in-repair',
      rowTestid: 'pipeline-row',
    }),
    table({
      caption: 'Out for repair: taken out by a provider or escalated',
      columns: ['Machine', 'Why', 'Issue', 'Since', 'By'],
      rows: p.outForRepair.map((m) => {
        const o = override(m, SOURCES.outForRepair);
        const escalated = /^Escalated/.test(o?.alerts?.[0]?.message ?? '');
        return [
          machineLink(m.id),
          h('span', null, escalated ? h('span', { class: 'badge bad' }, 'escalated') : null, ' ', o?.alerts?.[0]?.message ?? ''),
          issueCell(issueOf(m)),
          time(o?.createdAt),
          o?.createdBy ?? '',
        ];
      }),
      empty: 'No machine is out for repair.',
      testid: 'pipeline-out-for-repair',
      rowTestid: 'pipeline-row',
    }),
    // Not a null child: replaceChildren() would show it as the text "null".
    ...(state.stuck
      ? [
          table({
            caption: 'Stuck repairs: past their service-level time',
            columns: ['Machine', 'Stage', 'Waiting', 'Since'],
            rows: state.stuck.map((s) => [machineLink(s.machineId), s.stage, duration((s.waitingMinutes ?? 0) * 60_000), time(s.since)]),
            empty: 'No repair is stuck.',
            testid: 'pipeline-stuck',
            rowTestid: 'pipeline-row',
          }),
        ]
      : []),
    table({
      caption: 'Completed and failed in the last 24 h',
      columns: ['Machine', 'Outcome', 'When', 'repair_status', 'Issue repaired'],
      rows: recent.map((o) => [
        machineLink(o.machineId),
        h('span', { class: `badge ${o.outcome === 'Completed' ? 'good' : 'bad'}` }, o.outcome),
        h('span', null, time(o.at), h('span', { class: 'muted' }, ` (${since(o.at, now)} ago)`)),
        o.repairStatus ?? '',
        o.issue ? issueCell(o.issue) : '',
      ]),
      empty: 'No repair finished in the last 24 hours.',
      testid: 'pipeline-outcomes',
      rowTestid: 'pipeline-row',
    }),
  );
}

function renderSafety(/** @type {number} */ now) {
  const section = $('safety');
  const safety = state.safety;
  section.hidden = !safety;
  if (!safety) return;
  const storm = safety.repairStorm ?? { state: 'unknown', heldBack: [] };
  const tripped = storm.state === 'tripped';
  $('safety-body').replaceChildren(
    h(
      'dl',
      { class: 'facts' },
      h('dt', null, 'Repair-storm breaker'),
      h(
        'dd',
        { 'data-testid': 'breaker-state' },
        h('span', { class: `badge ${tripped ? 'bad' : 'good'}` }, tripped ? 'tripped' : storm.state),
        tripped && storm.trippedAt ? h('span', null, ' since ', time(storm.trippedAt), ` (${since(storm.trippedAt, now)} ago): repair requests are held back until a provider resets it`) : '',
      ),
      h('dt', null, 'Held back'),
      h('dd', { 'data-testid': 'held-back' }, storm.heldBack?.length ? storm.heldBack.map((id, i) => [i > 0 ? ', ' : '', machineLink(id)]) : 'none'),
      h('dt', null, 'Meta-instance replacements in flight'),
      h('dd', null, String(safety.replacementsInFlight ?? 'unknown'), state.config?.config?.meta_instance ? ` (limit ${state.config.config.meta_instance.max_replacements_in_flight})` : ''),
    ),
  );
}

function renderMetas(/** @type {number} */ now) {
  const section = $('meta');
  section.hidden = !state.metas;
  if (!state.metas) return;
  const max = state.config?.config?.meta_instance?.max_consecutive_failures;
  $('meta-body').replaceChildren(
    table({
      caption: 'Meta-instances on this site, newest first',
      columns: ['Meta-instance', 'Org', 'Type', 'Nodes', 'Status', 'Last error', 'Next attempt'],
      rows: state.metas.map((m) => [
        h('code', null, m.id),
        m.org,
        m.machineType,
        `${m.instanceIds?.length ?? 0} of ${m.minNodes}${m.placement?.sameRack ? ', same rack' : ''}`,
        h('span', { class: `badge ${m.status === 'Ready' ? 'good' : m.status === 'Retrying' ? 'bad' : 'warn'}` }, metaStatus(m, max)),
        m.lastFailureError ?? m.placementError ?? '',
        m.nextAttemptAt ? h('span', null, time(m.nextAttemptAt), Date.parse(m.nextAttemptAt) > now ? ` (in ${duration(Date.parse(m.nextAttemptAt) - now)})` : '') : '',
      ]),
      empty: 'No meta-instances.',
      testid: 'meta-table',
      rowTestid: 'meta-row',
    }),
  );
}

// The agent's alerts are named on hover of its override: which probe failed, without opening the machine.
const overrideList = (/** @type {Machine} */ m) =>
  m.healthOverrides.length
    ? m.healthOverrides.map((o, i) => [
        i > 0 ? ' ' : '',
        o.source === SOURCES.hardwareHealth
          ? h('code', { class: 'source hardware-health', title: o.alerts.map((a) => a.id).join(', ') }, o.source)
          : h('code', { class: 'source' }, o.source),
      ])
    : h('span', { class: 'muted' }, 'none');
const labelList = (/** @type {Record<string, string>} */ labels) =>
  Object.entries(labels ?? {}).map(([k, v], i) => [i > 0 ? ', ' : '', h('code', null, `${k}=${v}`)]);

function renderMachines() {
  const page = state.machinePage;
  if (!page) return;
  const pageNumber = state.pageTokens.length;
  const filtered = machineQuery();
  const filters = [filtered.state, filtered.machineType, filtered.healthOverride, filtered.allocatable && `allocatable=${filtered.allocatable}`].filter(Boolean);
  $('machines-body').replaceChildren(
    table({
      caption: `Machines${filters.length ? ` (${filters.join(', ')})` : ''}, page ${pageNumber}: ${page.items.length} shown`,
      columns: ['Machine', 'Type', 'Rack', 'State', 'Allocatable', 'Health overrides', 'Instance', 'Labels'],
      rows: page.items.map((m) => [
        machineLink(m.id),
        m.machineType,
        m.rack,
        m.state,
        m.allocatable ? 'yes' : h('span', { title: m.notAllocatableReasons.join(', ') }, 'no'),
        overrideList(m),
        m.instanceId ? h('code', null, m.instanceId) : '',
        labelList(m.labels),
      ]),
      // The server filters each page: a page may hold few matches, or none, with more on the next.
      empty: page.nextToken ? 'No match on this page; try the next one.' : filters.length ? 'No machine matches.' : 'No machines registered.',
      testid: 'machines-table',
      compact: true,
    }),
  );
  /** @type {HTMLButtonElement} */ ($('page-previous')).disabled = pageNumber === 1;
  /** @type {HTMLButtonElement} */ ($('page-next')).disabled = !page.nextToken;
}

/** Another page or other filters: the table follows at once, the rest of the dashboard keeps its rhythm. */
function showPage(/** @type {Array<string | undefined>} */ tokens) {
  state.pageTokens = tokens;
  void refresh();
}

/** "state: Assigned → Cleanup" @param {Record<string, { from?: unknown, to?: unknown }> | undefined} changes */
function changeText(changes) {
  const show = (/** @type {unknown} */ v) => (v === undefined ? '∅' : typeof v === 'string' ? v : JSON.stringify(v));
  return Object.entries(changes ?? {}).map(([field, c]) => `${field}: ${show(c?.from)} → ${show(c?.to)}`);
}

/** The site agent's health alerts on the machine, each on its own row; nothing when it reports none. */
function agentAlerts(/** @type {Machine} */ m) {
  const alerts = override(m, SOURCES.hardwareHealth)?.alerts ?? [];
  if (alerts.length === 0) return '';
  return table({
    caption: 'Health alerts (site agent)',
    columns: ['Alert', 'Classifications', 'Message'],
    rows: alerts.map((a) => [h('code', null, a.id), a.classifications.join(', '), a.message]),
    empty: '',
    testid: 'detail-alerts',
  });
}

function renderDetail(/** @type {number} */ now) {
  const section = $('machine');
  const detail = state.detail;
  section.hidden = !detail;
  if (!detail) return;
  const close = h('a', { href: '#', class: 'close' }, 'Close');
  $('machine-title').replaceChildren(`Machine ${detail.id} `, close);
  if (!detail.machine) {
    $('machine-body').replaceChildren(h('p', null, detail.error ?? 'Loading…'));
    return;
  }
  const m = detail.machine;
  const history = detail.history ?? [];
  $('machine-body').replaceChildren(
    h(
      'dl',
      { class: 'facts' },
      h('dt', null, 'Type'),
      h('dd', null, m.machineType),
      h('dt', null, 'Rack'),
      h('dd', null, m.rack),
      h('dt', null, 'State'),
      h('dd', { 'data-testid': 'detail-state' }, m.state, m.cleanup ? ` (cleanup ${m.cleanup.phase}${m.cleanup.error ? `: ${m.cleanup.error}` : ''})` : ''),
      h('dt', null, 'Instance'),
      h('dd', null, m.instanceId ? h('code', null, m.instanceId) : 'none'),
      h('dt', null, 'Allocatable'),
      h('dd', { 'data-testid': 'detail-allocatable' }, m.allocatable ? 'yes' : `no: ${m.notAllocatableReasons.join(', ')}`),
      h('dt', null, 'Last heartbeat'),
      h('dd', null, m.lastHeartbeatAt ? h('span', null, time(m.lastHeartbeatAt), ` (${since(m.lastHeartbeatAt, now)} ago)`) : 'unknown'),
    ),
    table({
      caption: 'Health overrides',
      columns: ['Source', 'Mode', 'Message', 'Classifications', 'Issue', 'By', 'Since'],
      rows: m.healthOverrides.map((o) => [
        h('code', null, o.source),
        o.mode,
        o.alerts.map((a) => a.message).join('; '),
        o.alerts.flatMap((a) => a.classifications).join(', '),
        o.issue ? h('span', null, issueCell(o.issue), o.issue.details ? h('span', { class: 'muted' }, ` — ${o.issue.details}`) : '') : '',
        o.createdBy,
        time(o.createdAt),
      ]),
      empty: 'No health overrides.',
      testid: 'detail-overrides',
    }),
    agentAlerts(m),
    table({
      caption: 'Labels',
      columns: ['Label', 'Value'],
      rows: Object.entries(m.labels ?? {}).map(([k, v]) => [h('code', null, k), v]),
      empty: 'No labels.',
      testid: 'detail-labels',
    }),
    h('h3', null, `History, newest first${history.length >= HISTORY_LIMIT ? ` (latest ${HISTORY_LIMIT})` : ''}`),
    history.length === 0
      ? h('p', { class: 'muted' }, 'No history.')
      : h(
          'ol',
          { class: 'timeline', 'data-testid': 'history' },
          history.map((e) =>
            h(
              'li',
              { 'data-testid': 'history-entry' },
              h('div', { class: 'when' }, time(e.at)),
              h(
                'div',
                { class: 'what' },
                h('span', { class: 'action' }, e.action),
                e.message ? h('span', { class: 'message' }, ' ', e.message) : '',
                h('span', { class: 'muted' }, ` by ${e.actor}`),
                e.instanceId ? h('span', { class: 'muted' }, ` · instance ${e.instanceId}`) : '',
                e.issue ? h('div', null, 'Issue: ', issueCell(e.issue), e.issue.details ? h('span', { class: 'muted' }, ` — ${e.issue.details}`) : '') : '',
                e.labels && Object.keys(e.labels).length ? h('div', { class: 'muted' }, 'Labels: ', labelList(e.labels)) : '',
                changeText(e.changes).map((c) => h('div', { class: 'change' }, c)),
              ),
            ),
          ),
        ),
  );
}

// ---- sign-in ---------------------------------------------------------------------------------------------------

function showLogin(/** @type {string} */ reason) {
  clearTimeout(timer);
  $('login-reason').textContent = reason;
  $('login').hidden = false;
  $('main').hidden = true;
  $('sign-out').hidden = true;
  $('refresh-status').textContent = 'Not signed in';
  $('errors').hidden = true;
  /** @type {HTMLTextAreaElement} */ ($('token-input')).focus();
}

function showMain() {
  $('login').hidden = true;
  $('main').hidden = false;
  $('sign-out').hidden = false;
}

async function start() {
  api = createApi(await apiBaseUrl());
  $('login').addEventListener('submit', (event) => {
    event.preventDefault();
    const input = /** @type {HTMLTextAreaElement} */ ($('token-input'));
    api.setToken(input.value.replace(/^Bearer\s+/i, ''));
    input.value = '';
    void refresh();
  });
  $('sign-out').addEventListener('click', () => {
    api.signOut();
    showLogin('Paste a bearer token with the provider-admin role.');
  });
  $('machine-filters').addEventListener('change', () => showPage([undefined]));
  $('machine-filters').addEventListener('submit', (event) => {
    event.preventDefault();
    showPage([undefined]);
  });
  $('rack-type').addEventListener('change', () => void refresh());
  $('page-next').addEventListener('click', () => showPage([...state.pageTokens, state.machinePage?.nextToken]));
  $('page-previous').addEventListener('click', () => showPage(state.pageTokens.slice(0, -1)));
  window.addEventListener('hashchange', () => {
    const id = selectedMachine();
    state.detail = id ? { id } : null;
    render();
    if (id) $('machine').scrollIntoView({ block: 'start' });
    void refresh();
  });
  await refresh();
}

void start();
