// What several panels show of a machine the same way: an issue, a list of labels.
import { h } from './dom.js';

/** @import { HistoryEntry } from './fleet.js' */

/** "HARDWARE ECC errors", its details on hover; "none given" without one. */
export const issueCell = (/** @type {HistoryEntry['issue']} */ issue) =>
  issue
    ? h('span', { class: 'issue', title: issue.details ?? '' }, h('span', { class: 'category' }, issue.category), ' ', issue.summary)
    : h('span', { class: 'muted' }, 'none given');

/** `k=v, k2=v2`, each in code. */
export const labelList = (/** @type {Record<string, string> | undefined} */ labels) =>
  Object.entries(labels ?? {}).map(([k, v], i) => [i > 0 ? ', ' : '', h('code', null, `${k}=${v}`)]);
