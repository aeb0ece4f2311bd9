// The safety panel: the repair-storm breaker, the machines it held back, and meta-instance replacements in flight
// (GET /admin/safety, shared as `safety`); hidden when the API has no such route.
import { assign, byId, h, machineLink, time, view } from '../dom.js';
import { since } from '../fleet.js';

/**
 * @typedef {object} SafetyView
 * @property {string} state
 * @property {string} [trippedAt] set while tripped
 * @property {string} ago how long it has been tripped
 * @property {string[]} heldBack
 * @property {string} inFlight
 * @property {number} [limit] the replacements allowed in flight
 */

const facts = (/** @type {SafetyView} */ v) =>
  h(
    'dl',
    { class: 'facts' },
    h('dt', null, 'Repair-storm breaker'),
    h(
      'dd',
      { 'data-testid': 'breaker-state' },
      h('span', { class: `badge ${v.state === 'tripped' ? 'bad' : 'good'}` }, v.state),
      v.trippedAt ? h('span', null, ' since ', time(v.trippedAt), ` (${v.ago} ago): repair requests are held back until a provider resets it`) : '',
    ),
    h('dt', null, 'Held back'),
    h('dd', { 'data-testid': 'held-back' }, v.heldBack.length ? v.heldBack.map((id, i) => [i > 0 ? ', ' : '', machineLink(id)]) : 'none'),
    h('dt', null, 'Meta-instance replacements in flight'),
    h('dd', null, v.inFlight, v.limit !== undefined ? ` (limit ${v.limit})` : ''),
  );

/** @param {import('../poll.js').PanelContext} context */
export function createSafety({ api, store }) {
  const section = byId('safety');
  const list = h('dl', { class: 'facts' });
  const show = view(list, facts);
  byId('safety-body').replaceChildren(list);

  return {
    /** @param {import('../poll.js').Attempt} attempt */
    async load(attempt) {
      const safety = await attempt(() => api.optional(() => api.get('/admin/safety')));
      if (safety !== undefined) store.set('safety', safety);
    },

    /** @param {number} now */
    render(now) {
      const safety = store.get('safety');
      assign(section, { hidden: !safety });
      if (!safety) return;
      const storm = safety.repairStorm ?? { state: 'unknown', heldBack: [] };
      const tripped = storm.state === 'tripped';
      show({
        state: storm.state,
        trippedAt: tripped ? storm.trippedAt : undefined,
        ago: tripped ? since(storm.trippedAt, now) : '',
        heldBack: storm.heldBack ?? [],
        inFlight: String(safety.replacementsInFlight ?? 'unknown'),
        limit: store.get('config')?.config?.meta_instance?.max_replacements_in_flight,
      });
    },
  };
}
