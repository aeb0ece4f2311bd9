// The few things one panel loads and others show, shared by name: a panel sets what it loaded, and the others read
// it when they render (every panel has loaded by then) or when they load in a later stage of the refresh (poll.js).
// Nothing else is shared between panels.

/** @import { Answer, Item } from '../client/api.ts' */

/**
 * @typedef {object} Shared
 * @property {Answer<'/admin/config', 'get'>} [config] the site's configuration, from the header (read once)
 * @property {Answer<'/admin/migrations', 'get'>} [migrations] the data migrations, from the header (read while any is not done)
 * @property {Answer<'/admin/fleet/summary', 'get'>} [summary] from the fleet panel: the rack map's machine types
 * @property {Item<'/admin/repairs'>[] | null} [stuck] stuck repairs, from the pipeline: outlined on the rack map; null: no such route
 * @property {Answer<'/admin/safety', 'get'> | null} [safety] from the safety panel: the pipeline marks what the breaker held back
 */

export function createStore() {
  /** @type {Shared} */
  const values = {};
  return {
    /** @template {keyof Shared} K @param {K} name @returns {Shared[K]} */
    get: (name) => values[name],
    /** @template {keyof Shared} K @param {K} name @param {Shared[K]} value */
    set: (name, value) => {
      values[name] = value;
    },
  };
}

/** @typedef {ReturnType<typeof createStore>} Store */
