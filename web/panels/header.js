// The header: the site's name and version (GET /admin/config, read once and shared as `config`), when the last
// refresh went through, and the errors of the last one.
import { assign, byId, h, keyedList } from '../dom.js';

/** @param {import('../poll.js').PanelContext} context @param {number} every the refresh period, in ms */
export function createHeader({ api, store }, every) {
  const status = byId('refresh-status');
  const errors = byId('errors');
  const siteName = byId('site-name');
  const showErrors = keyedList(errors, { key: (/** @type {string} */ e) => e, render: (e) => h('p', null, e) });
  const period = `refreshes every ${every / 1000} s`;
  /** @type {Date | null} */
  let lastOk = null;
  let refreshes = 0;

  return {
    async load() {
      if (!store.get('config')) store.set('config', await api.get('/admin/config'));
    },

    render() {
      const config = store.get('config');
      const name = config?.config?.site?.name;
      assign(siteName, { textContent: name ? `· site ${name}${config?.version ? ` · ${config.version}` : ''}` : '' });
    },

    /** What the round found: the status line and the errors (the data of the last good round stays on screen). */
    showRound(/** @type {import('../poll.js').Round} */ round) {
      refreshes += 1;
      status.dataset.refreshes = String(refreshes);
      if (round.errors.length === 0) {
        lastOk = new Date();
        assign(status, { className: 'status', textContent: `Last refreshed ${lastOk.toLocaleTimeString()} (${period})` });
      } else {
        const shown = lastOk ? `; showing data from ${lastOk.toLocaleTimeString()}` : '';
        assign(status, { className: 'status stale', textContent: `Refresh failed at ${round.startedAt.toLocaleTimeString()}${shown} (${period})` });
      }
      assign(errors, { hidden: round.errors.length === 0 });
      showErrors(round.errors);
    },

    signedOut() {
      assign(status, { textContent: 'Not signed in' });
      assign(errors, { hidden: true });
    },
  };
}
