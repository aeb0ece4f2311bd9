// A tiny DOM builder: h('p', { class: 'x' }, 'text', child). No framework, no build step.

/** @param {string} tag @param {Record<string, unknown> | null} [props] @param {...unknown} children */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'class') el.className = String(value);
    else if (name.startsWith('on') && typeof value === 'function') el.addEventListener(name.slice(2), /** @type {EventListener} */ (value));
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  el.append(...nodes(children));
  return el;
}

/** @param {unknown[]} children @returns {(Node | string)[]} */
function nodes(children) {
  return children.flat(Infinity).filter((c) => c !== undefined && c !== null && c !== false).map((c) => (c instanceof Node ? c : String(c)));
}

/**
 * A table with a caption and a header row; `empty` is shown in one full-width cell when there are no rows.
 * @param {{ caption: unknown, columns: string[], rows: unknown[][], empty?: string, testid?: string, rowTestid?: string, compact?: boolean }} spec
 */
export function table({ caption, columns, rows, empty = 'None.', testid, rowTestid, compact = false }) {
  return h(
    'table',
    { 'data-testid': testid, class: compact ? 'compact' : undefined },
    h('caption', null, caption),
    h('thead', null, h('tr', null, columns.map((c) => h('th', { scope: 'col' }, c)))),
    h(
      'tbody',
      null,
      rows.length === 0
        ? h('tr', { class: 'empty' }, h('td', { colspan: columns.length }, empty))
        : rows.map((cells) => h('tr', { 'data-testid': rowTestid }, cells.map((cell) => h('td', null, cell)))),
    ),
  );
}

/** @param {string | undefined} iso */
export function time(iso) {
  if (!iso) return '';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const sameDay = date.toDateString() === new Date().toDateString();
  const text = sameDay ? date.toLocaleTimeString() : date.toLocaleString();
  return h('time', { datetime: iso, title: iso }, text);
}

/** @param {string} id */
export const machineLink = (id) => h('a', { href: `#machine/${encodeURIComponent(id)}`, class: 'machine', 'data-machine': id }, id);
