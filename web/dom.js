// The dashboard's DOM layer: a tiny element builder, h('p', { class: 'x' }, 'text', child), and the helpers that let
// a panel write to the page only what changed. No framework, no build step.
//
// Change detection compares data, not DOM: a list keeps the JSON of each item it last rendered, by key, and builds
// an item again only when its JSON differs; the new element is then morphed into the one on the page, so only the
// attributes and text that differ are written. An unchanged item is not built at all, and nothing on the page is
// replaced: focus, scroll position and selections survive the refresh.

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
  return children
    .flat(Infinity)
    .filter((c) => c !== undefined && c !== null && c !== false)
    .map((c) => (c instanceof Node ? c : String(c)));
}

/** An element of index.html by id. */
export const byId = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));

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

/**
 * Sets the properties that differ, and only those: the DOM records a write of an unchanged value as a mutation too.
 * @template {HTMLElement} E
 * @param {E} el
 * @param {Partial<E>} props
 */
export function assign(el, props) {
  for (const [name, value] of Object.entries(props)) {
    const key = /** @type {keyof E} */ (name);
    if (el[key] !== value) el[key] = value;
  }
}

/**
 * Makes the node on the page (`live`) look like `fresh`, writing only the attributes and text that differ; children
 * are matched by position. Returns the node now on the page (`fresh` when the two are not of the same kind).
 * Listeners are not carried over: they belong on the elements a panel keeps, never on ones it builds again.
 * @param {ChildNode} live
 * @param {ChildNode} fresh
 * @returns {ChildNode}
 */
export function morph(live, fresh) {
  if (live.nodeName !== fresh.nodeName) {
    live.replaceWith(fresh);
    return fresh;
  }
  if (!(live instanceof Element) || !(fresh instanceof Element)) {
    if (live.nodeValue !== fresh.nodeValue) live.nodeValue = fresh.nodeValue;
    return live;
  }
  for (const { name, value } of fresh.attributes) if (live.getAttribute(name) !== value) live.setAttribute(name, value);
  for (const name of live.getAttributeNames()) if (!fresh.hasAttribute(name)) live.removeAttribute(name);
  const had = [...live.childNodes];
  const wanted = [...fresh.childNodes];
  wanted.forEach((child, i) => {
    const old = had[i];
    if (old) morph(old, child);
    else live.append(child);
  });
  for (const extra of had.slice(wanted.length)) extra.remove();
  return live;
}

/**
 * Makes `wanted` the children of `parent`, in order, moving or removing only those out of place.
 * @param {Element} parent
 * @param {readonly Node[]} wanted
 */
export function place(parent, wanted) {
  const keep = new Set(wanted);
  for (const child of [...parent.childNodes]) if (!keep.has(child)) child.remove();
  let cursor = parent.firstChild;
  for (const node of wanted) {
    if (node === cursor) cursor = cursor.nextSibling;
    else parent.insertBefore(node, cursor);
  }
}

/** What an item looked like when it was last drawn: any JSON difference means it must be drawn again. */
const signature = (/** @type {unknown} */ data) => JSON.stringify(data) ?? 'undefined';

/**
 * `el`, kept as `build(data)` would make it for the latest data: built again and morphed into `el` only when the
 * data differs from the last call's. `build` must depend on its data alone, and make an element of `el`'s tag.
 * @template T
 * @param {Element} el
 * @param {(data: T) => Element} build
 * @returns {(data: T) => void}
 */
export function view(el, build) {
  /** @type {string | undefined} */
  let drawn;
  return (data) => {
    const sig = signature(data);
    if (sig === drawn) return;
    drawn = sig;
    morph(el, build(data));
  };
}

/**
 * The children of `parent` as one element per item, matched by key: a new key is rendered, a gone one removed, a
 * changed item (its JSON differs) updated in place, an unchanged one left alone. `render` must depend on the item
 * alone. A key seen twice gets its occurrence appended, so equal entries stay distinct.
 * @template T
 * @param {Element} parent
 * @param {{ key: (item: T) => string, render: (item: T) => Element }} how
 * @returns {(items: readonly T[]) => void}
 */
export function keyedList(parent, { key, render }) {
  /** @type {Map<string, { sig: string, node: ChildNode }>} */
  let shown = new Map();
  return (items) => {
    /** @type {Map<string, { sig: string, node: ChildNode }>} */
    const next = new Map();
    /** @type {Map<string, number>} */
    const seen = new Map();
    for (const item of items) {
      const base = key(item);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      const k = n === 0 ? base : `${base}\u0000${n}`;
      const sig = signature(item);
      const old = shown.get(k);
      const node = !old ? render(item) : old.sig === sig ? old.node : morph(old.node, render(item));
      next.set(k, { sig, node });
    }
    shown = next;
    place(
      parent,
      [...next.values()].map((entry) => entry.node),
    );
  };
}

/**
 * Numbers with their labels, one tile per testid (`<testid>` on the tile, its number in `.value`).
 * @param {Element} parent
 * @param {string} tag
 * @param {string} className
 * @returns {(tiles: readonly { testid: string, label: string, value: number }[]) => void}
 */
export const tileList = (parent, tag, className) =>
  keyedList(parent, {
    key: (t) => t.testid,
    render: (t) => h(tag, { class: className, 'data-testid': t.testid }, h('span', { class: 'value' }, t.value), h('span', { class: 'label' }, t.label)),
  });

/**
 * A table whose rows are kept by key (see keyedList): a caption, a header row, and `empty` in one full-width cell
 * when there are no rows. `cells` must depend on the row alone: what a row shows is what its data holds.
 * @template T
 * @param {{ columns: string[], key: (row: T) => string, cells: (row: T) => unknown[], testid?: string, rowTestid?: string, compact?: boolean }} spec
 */
export function createTable({ columns, key, cells, testid, rowTestid, compact = false }) {
  const caption = h('caption');
  const body = h('tbody');
  const head = h(
    'thead',
    null,
    h(
      'tr',
      null,
      columns.map((c) => h('th', { scope: 'col' }, c)),
    ),
  );
  const el = h('table', { 'data-testid': testid, class: compact ? 'compact' : undefined }, caption, head, body);
  /** @type {(items: readonly ({ row: T } | { empty: string })[]) => void} */
  const rows = keyedList(body, {
    key: (item) => ('row' in item ? `row ${key(item.row)}` : 'empty'),
    render: (item) =>
      'row' in item
        ? h(
            'tr',
            { 'data-testid': rowTestid },
            cells(item.row).map((cell) => h('td', null, cell)),
          )
        : h('tr', { class: 'empty' }, h('td', { colspan: columns.length }, item.empty)),
  });
  return {
    el,
    /** @param {readonly T[]} items @param {{ caption: string, empty?: string }} text */
    show(items, { caption: title, empty = 'None.' }) {
      assign(caption, { textContent: title });
      rows(items.length > 0 ? items.map((row) => ({ row })) : [{ empty }]);
    },
  };
}
