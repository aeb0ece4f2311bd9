// The machine detail: the machine chosen in the URL (#machine/<id>), its record and its newest history entries
// (GET /admin/machines/{id}, GET /admin/machines/{id}/history).
import { ApiError } from '../api.js';
import { assign, byId, createTable, h, keyedList, place, time, view } from '../dom.js';
import { override, since, SOURCES } from '../fleet.js';
import { issueCell, labelList } from '../machine-parts.js';

/** @import { HistoryEntry, Machine } from '../fleet.js' */

const HISTORY_LIMIT = 100;

const selectedMachine = () => {
  const match = /^#machine\/(.+)$/.exec(location.hash);
  return match ? decodeURIComponent(match[1] ?? '') : null;
};

/** The issue and, after a dash, its details. */
const issueWithDetails = (/** @type {NonNullable<HistoryEntry['issue']>} */ issue) =>
  h('span', null, issueCell(issue), issue.details ? h('span', { class: 'muted' }, ` — ${issue.details}`) : '');

/** "state: Assigned → Cleanup" @param {Record<string, { from?: unknown, to?: unknown }> | undefined} changes */
function changeText(changes) {
  const show = (/** @type {unknown} */ v) => (v === undefined ? '∅' : typeof v === 'string' ? v : JSON.stringify(v));
  return Object.entries(changes ?? {}).map(([field, c]) => `${field}: ${show(c?.from)} → ${show(c?.to)}`);
}

/** "passed (repair, standard) at …; failed: nccl-all-reduce", or how long a running one has been waited for. */
function validationText(/** @type {Machine['validation']} */ v, /** @type {number} */ now) {
  if (!v) return 'never validated';
  const failed = (v.results ?? []).filter((r) => !r.passed).map((r) => r.test);
  const when = v.finishedAt ? `finished ${since(v.finishedAt, now)} ago` : `running for ${since(v.requestedAt, now)}`;
  const notes = [...(failed.length > 0 ? [`failed: ${failed.join(', ')}`] : []), ...(v.stuckAt ? ['overran its timeout'] : [])];
  return [`${v.state} (${v.reason}, suite ${v.suite}), ${when}`, ...notes].join('; ');
}

/** The machine's facts, its last heartbeat "… ago" included. */
const factsOf = (/** @type {Machine} */ m, /** @type {number} */ now) => ({
  machineType: m.machineType,
  rack: m.rack,
  state: `${m.state}${m.cleanup ? ` (cleanup ${m.cleanup.phase}${m.cleanup.error ? `: ${m.cleanup.error}` : ''})` : ''}`,
  lifecycle: m.lifecycle,
  validation: validationText(m.validation, now),
  instanceId: m.instanceId,
  allocatable: m.allocatable ? 'yes' : `no: ${m.notAllocatableReasons.join(', ')}`,
  heartbeatAt: m.lastHeartbeatAt,
  heartbeatAgo: since(m.lastHeartbeatAt, now),
});

const facts = (/** @type {ReturnType<typeof factsOf>} */ f) =>
  h(
    'dl',
    { class: 'facts' },
    h('dt', null, 'Type'),
    h('dd', null, f.machineType),
    h('dt', null, 'Rack'),
    h('dd', null, f.rack),
    h('dt', null, 'State'),
    h('dd', { 'data-testid': 'detail-state' }, f.state),
    h('dt', null, 'Lifecycle'),
    h('dd', { 'data-testid': 'detail-lifecycle' }, f.lifecycle),
    h('dt', null, 'Validation'),
    h('dd', { 'data-testid': 'detail-validation' }, f.validation),
    h('dt', null, 'Instance'),
    h('dd', null, f.instanceId ? h('code', null, f.instanceId) : 'none'),
    h('dt', null, 'Allocatable'),
    h('dd', { 'data-testid': 'detail-allocatable' }, f.allocatable),
    h('dt', null, 'Last heartbeat'),
    h('dd', null, f.heartbeatAt ? h('span', null, time(f.heartbeatAt), ` (${f.heartbeatAgo} ago)`) : 'unknown'),
  );

const historyEntry = (/** @type {HistoryEntry} */ e) =>
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
      e.issue ? h('div', null, 'Issue: ', issueWithDetails(e.issue)) : '',
      e.labels && Object.keys(e.labels).length ? h('div', { class: 'muted' }, 'Labels: ', labelList(e.labels)) : '',
      changeText(e.changes).map((c) => h('div', { class: 'change' }, c)),
    ),
  );

/** @param {import('../poll.js').PanelContext} context */
export function createMachineDetail({ api, refresh }) {
  const section = byId('machine');
  const title = byId('machine-title');
  const body = byId('machine-body');
  const message = h('p');
  const factList = h('dl', { class: 'facts' });
  const showFacts = view(factList, facts);
  const overrides = createTable({
    columns: ['Source', 'Mode', 'Message', 'Classifications', 'Issue', 'By', 'Since'],
    key: (/** @type {Machine['healthOverrides'][number]} */ o) => o.source,
    cells: (o) => [
      h('code', null, o.source),
      o.mode,
      o.alerts.map((a) => a.message).join('; '),
      o.alerts.flatMap((a) => a.classifications).join(', '),
      o.issue ? issueWithDetails(o.issue) : '',
      o.createdBy,
      time(o.createdAt),
    ],
    testid: 'detail-overrides',
  });
  const alerts = createTable({
    columns: ['Alert', 'Classifications', 'Message'],
    key: (/** @type {Machine['healthOverrides'][number]['alerts'][number]} */ a) => a.id,
    cells: (a) => [h('code', null, a.id), a.classifications.join(', '), a.message],
    testid: 'detail-alerts',
  });
  const labels = createTable({
    columns: ['Label', 'Value'],
    key: (/** @type {[string, string]} */ [k]) => k,
    cells: ([k, v]) => [h('code', null, k), v],
    testid: 'detail-labels',
  });
  const historyTitle = h('h3');
  const noHistory = h('p', { class: 'muted' }, 'No history.');
  const timeline = h('ol', { class: 'timeline', 'data-testid': 'history' });
  const showHistory = keyedList(timeline, {
    // Entries have no id of their own; equal keys are told apart by keyedList.
    key: (/** @type {HistoryEntry} */ e) => `${e.at} ${e.action} ${e.eventId ?? ''} ${e.message ?? ''}`,
    render: historyEntry,
  });
  /** @type {{ id: string, machine?: Machine, history?: HistoryEntry[], error?: string } | null} */
  let detail = null;
  let titled = '';

  window.addEventListener('hashchange', () => {
    const id = selectedMachine();
    detail = id ? { id } : null;
    render(Date.now());
    if (id) section.scrollIntoView({ block: 'start' });
    refresh();
  });

  /** @param {number} now */
  function render(now) {
    assign(section, { hidden: !detail });
    if (!detail) return;
    if (titled !== detail.id) {
      titled = detail.id;
      title.replaceChildren(`Machine ${detail.id} `, h('a', { href: '#', class: 'close' }, 'Close'));
    }
    const m = detail.machine;
    if (!m) {
      assign(message, { textContent: detail.error ?? 'Loading…' });
      place(body, [message]);
      return;
    }
    const history = detail.history ?? [];
    const agentAlerts = override(m, SOURCES.hardwareHealth)?.alerts ?? [];
    showFacts(factsOf(m, now));
    overrides.show(m.healthOverrides, { caption: 'Health overrides', empty: 'No health overrides.' });
    alerts.show(agentAlerts, { caption: 'Health alerts (site agent)' });
    labels.show(Object.entries(m.labels ?? {}), { caption: 'Labels', empty: 'No labels.' });
    assign(historyTitle, { textContent: `History, newest first${history.length >= HISTORY_LIMIT ? ` (latest ${HISTORY_LIMIT})` : ''}` });
    showHistory(history);
    // The site agent's alerts only while it reports some.
    place(body, [factList, overrides.el, ...(agentAlerts.length ? [alerts.el] : []), labels.el, historyTitle, history.length ? timeline : noHistory]);
  }

  return {
    async load() {
      const id = selectedMachine();
      if (!id) {
        detail = null;
        return;
      }
      const params = { path: { id } };
      try {
        const [machine, history] = await Promise.all([
          api.get('/admin/machines/{id}', { params }),
          api.list('/admin/machines/{id}/history', { params }, { limit: HISTORY_LIMIT, maxPages: 1 }),
        ]);
        if (selectedMachine() === id) detail = { id, machine, history };
      } catch (error) {
        if (error instanceof ApiError && error.status === 404) {
          detail = { id, error: `No machine ${id} on this site.` };
          return;
        }
        // Another machine's detail must not stay under this one's title.
        if (detail?.id !== id) detail = { id, error: 'Could not load this machine; see the error above.' };
        throw error;
      }
    },
    render,
  };
}
