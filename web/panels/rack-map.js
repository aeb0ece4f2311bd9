// The rack map: one machine type at a time, a tile per rack and a small square per machine, coloured by state and
// marked by overrides and stuck repairs (GET /admin/fleet/racks, the per-rack aggregates). Within a tile the squares
// are grouped by NVLink domain, each group outlined (a domain that spans racks has a group in each). Each rack is
// compared with what it last showed, so a change to one machine touches that machine's square only, however big the
// fleet. A square's classes come from `cellClasses` alone: a new marking is one more entry there. A reserved machine's
// square is outlined in its reservation's colour, and a key under the map names each reservation the racks hold.
import { byId, h, keyedList, place, view } from '../dom.js';
import { SOURCES } from '../fleet.js';

/** @import { Item } from '../../client/api.ts' */
/** @typedef {{ id: string, className: string, title: string, reservation: string | undefined }} Cell */
/** @typedef {{ domain: string | undefined, title: string, hue: number, cells: Cell[] }} DomainGroup */
/** @typedef {Item<'/admin/fleet/racks'>['machines'][string]} Entry */

/** Outline colours for domains, picked by a hash of the name: neighbouring domains mostly differ. */
const DOMAIN_HUES = 6;
/** Outline colours for reservations, picked the same way from the reservation's id; the key tells them apart. */
const RESERVATION_HUES = 6;

const numeric = (/** @type {string} */ a, /** @type {string} */ b) => a.localeCompare(b, undefined, { numeric: true });

/** The classes of one machine's square. */
const cellClasses = (/** @type {string} */ id, /** @type {Entry} */ m, /** @type {Set<string>} */ stuck) =>
  [
    'cell',
    `state-${m.state}`,
    m.quarantined && 'quarantined',
    m.overrides.includes(SOURCES.outForRepair) && 'out-for-repair',
    m.overrides.includes(SOURCES.hardwareHealth) && 'hardware-health',
    stuck.has(id) && 'stuck',
    m.reservation && `reserved reservation-hue-${hueOf(m.reservation.id, RESERVATION_HUES)}`,
  ]
    .filter(Boolean)
    .join(' ');

/** A stable number for a name, so what it names keeps its colour from one refresh to the next. */
function hueOf(/** @type {string} */ name, /** @type {number} */ hues) {
  let hash = 0;
  for (const char of name) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
  return hash % hues;
}

const reservationLabel = (/** @type {NonNullable<Entry['reservation']>} */ r) => `reservation ${r.id} (org ${r.org})`;

/** A rack as the map shows it: only what a square shows, so heartbeats and versions do not redraw it. */
function rackView(/** @type {Item<'/admin/fleet/racks'>} */ rack, /** @type {Set<string>} */ stuck) {
  /** @type {Map<string | undefined, Cell[]>} */
  const byDomain = new Map();
  for (const [id, m] of Object.entries(rack.machines).sort(([a], [b]) => numeric(a, b))) {
    const cell = {
      id,
      className: cellClasses(id, m, stuck),
      title: [id, m.state, m.overrides.join(', '), stuck.has(id) && 'stuck repair', m.reservation && reservationLabel(m.reservation)]
        .filter(Boolean)
        .join(' · '),
      reservation: m.reservation?.id,
    };
    byDomain.set(m.nvlinkDomain, [...(byDomain.get(m.nvlinkDomain) ?? []), cell]);
  }
  /** @type {DomainGroup[]} */
  const groups = [...byDomain]
    .sort(([a], [b]) => (a === undefined ? 1 : b === undefined ? -1 : numeric(a, b)))
    .map(([domain, cells]) => {
      const tally = domain === undefined ? undefined : rack.byNvlinkDomain?.[domain];
      const title = tally ? `NVLink domain ${domain}: ${tally.machines} here, ${tally.allocatable} allocatable, ${tally.quarantined} quarantined` : '';
      return { domain, title, hue: domain === undefined ? 0 : hueOf(domain, DOMAIN_HUES), cells };
    });
  return { rack: rack.rack, groups };
}

const cellLink = (/** @type {Cell} */ c) =>
  h('a', {
    href: `#machine/${encodeURIComponent(c.id)}`,
    class: c.className,
    'data-machine': c.id,
    'data-reservation': c.reservation,
    title: c.title,
    'aria-label': c.id,
  });

/** A domain's squares in a rack, outlined; machines without a domain are a group without an outline. */
const groupOf = (/** @type {DomainGroup} */ g) =>
  g.domain === undefined
    ? h('span', { class: 'cells' }, g.cells.map(cellLink))
    : h('span', { class: `cells nvlink-domain hue-${g.hue}`, 'data-testid': 'nvlink-domain', 'data-domain': g.domain, title: g.title }, g.cells.map(cellLink));

/** The reservations the racks hold, by id, each with its org and how many of these racks' machines it holds. */
function reservationsIn(/** @type {Item<'/admin/fleet/racks'>[]} */ racks) {
  /** @type {Map<string, { id: string, org: string, machines: number }>} */
  const held = new Map();
  for (const rack of racks) {
    for (const { reservation } of Object.values(rack.machines)) {
      if (!reservation) continue;
      const entry = held.get(reservation.id) ?? { ...reservation, machines: 0 };
      entry.machines += 1;
      held.set(reservation.id, entry);
    }
  }
  return [...held.values()].sort((a, b) => numeric(a.id, b.id));
}

/** The key to the reservations' outlines: an outlined square per reservation, with its id, org and machines here. */
const reservationKey = (/** @type {ReturnType<typeof reservationsIn>} */ reservations) =>
  h(
    'p',
    { class: 'legend reservation-keys muted' },
    reservations.map((r) =>
      h(
        'span',
        { class: 'reservation-key', 'data-testid': 'reservation-key', 'data-reservation': r.id, title: reservationLabel(r) },
        h('span', { class: `cell reserved reservation-hue-${hueOf(r.id, RESERVATION_HUES)}` }),
        ` ${reservationLabel(r)}: ${r.machines} machine${r.machines === 1 ? '' : 's'}`,
      ),
    ),
  );

/** @param {import('../poll.js').PanelContext} context */
export function createRackMap({ api, store, refresh }) {
  const select = /** @type {HTMLSelectElement} */ (byId('rack-type'));
  const body = byId('racks-body');
  const map = h('div', { class: 'rack-map' });
  const none = h('p', { class: 'muted' }, 'No racks recorded for this type yet.');
  const key = reservationKey([]);
  const showKey = view(key, reservationKey);
  // Squares are matched by position within a rack (its machines sorted by id): a changed rack is morphed, so only
  // the squares whose class or title changed are written.
  const showRacks = keyedList(map, {
    key: (/** @type {ReturnType<typeof rackView>} */ r) => r.rack,
    render: (r) => h('div', { class: 'rack', 'data-testid': 'rack', 'data-rack': r.rack }, h('span', { class: 'rack-name' }, r.rack), r.groups.map(groupOf)),
  });
  /** @type {{ machineType: string, racks: Item<'/admin/fleet/racks'>[] } | undefined} */
  let loaded;
  select.addEventListener('change', refresh);

  const types = () => Object.keys(store.get('summary')?.byType ?? {}).sort();

  return {
    /** The racks of the chosen type (the first type until one is chosen); a later stage than the fleet summary. */
    async load() {
      const all = types();
      const machineType = all.includes(select.value) ? select.value : all[0];
      if (!machineType) return;
      loaded = { machineType, racks: await api.list('/admin/fleet/racks', { params: { query: { machineType } } }, { limit: 100 }) };
    },

    render() {
      const all = types();
      if ([...select.options].map((o) => o.value).join() !== all.join()) {
        select.replaceChildren(...all.map((t) => h('option', { value: t }, t)));
        if (loaded) select.value = loaded.machineType;
      }
      if (!loaded) return;
      const stuck = new Set((store.get('stuck') ?? []).map((s) => s.machineId));
      const racks = [...loaded.racks].sort((a, b) => numeric(a.rack, b.rack)).map((rack) => rackView(rack, stuck));
      showRacks(racks);
      const reservations = reservationsIn(loaded.racks);
      showKey(reservations);
      place(body, racks.length === 0 ? [none] : reservations.length === 0 ? [map] : [map, key]);
    },
  };
}
