// The header: the site's name and version (GET /admin/config, read once and shared as `config`), its release and the
// data version its table holds with the migrations still to run (GET /admin/migrations, every round while any is
// not done), when the last refresh went through, and the errors of the last one.
import { assign, byId, h, keyedList } from '../dom.js';

/** @param {import('../poll.js').PanelContext} context @param {number} every the refresh period, in ms */
export function createHeader({ api, store }, every) {
  const status = byId('refresh-status');
  const errors = byId('errors');
  const siteName = byId('site-name');
  const release = byId('release');
  const showErrors = keyedList(errors, { key: (/** @type {string} */ e) => e, render: (e) => h('p', null, e) });
  const period = `refreshes every ${every / 1000} s`;
  /** @type {Date | null} */
  let lastOk = null;
  let refreshes = 0;

  return {
    async load() {
      if (!store.get('config')) store.set('config', await api.get('/admin/config'));
      const migrations = store.get('migrations');
      if (!migrations || migrations.items.some((/** @type {{ state: string }} */ m) => m.state !== 'done')) {
        store.set('migrations', await api.get('/admin/migrations'));
      }
    },

    render() {
      const config = store.get('config');
      const name = config?.config?.site?.name;
      assign(siteName, { textContent: name ? `· site ${name}${config?.version ? ` · ${config.version}` : ''}` : '' });
      assign(release, { textContent: config ? releaseLine(config, store.get('migrations')?.items ?? []) : '' });
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

/**
 * `release 0.2.0 · data version 3 of 3`, and while migrations run, each one's progress.
 * @param {{ release?: string, dataVersion?: number, latestDataVersion?: number }} config
 * @param {Array<{ id: number, name: string, state: string, itemsDone: number, itemsTotal?: number }>} migrations
 */
function releaseLine(config, migrations) {
  // The table's data version moves as migrations finish: the last of them done, once they are read.
  const done = migrations.filter((m) => m.state === 'done').length;
  const line = `release ${config.release} · data version ${migrations.length > 0 ? done : config.dataVersion} of ${config.latestDataVersion}`;
  const open = migrations.filter((m) => m.state !== 'done');
  if (open.length === 0) return line;
  const progress = (/** @type {typeof migrations[number]} */ m) =>
    `${m.id} ${m.name} ${m.state}${m.itemsTotal ? ` ${m.itemsDone}/${m.itemsTotal}` : m.itemsDone ? ` ${m.itemsDone}` : ''}`;
  return `${line} · migrations: ${open.map(progress).join(', ')}`;
}
