import type { Reservation } from '#domain/reservations/reservations.ts';
import { dueAttributes } from '#store/aggregates/due.ts';
import type { Item } from '#store/item-access.ts';
import { strip } from '#store/item-codec.ts';

export const reservationKeys = {
  reservation: (id: string) => ({ pk: `RESERVATION#${id}`, sk: '#RESERVATION' }),
};

export const RESERVATION_KIND = 'RESERVATION';
export const reservationsOfOrg = (org: string): string => `ORG#${org}#RESERVATION`;

/** Every reservation is in byKind (kind `RESERVATION`) and in byOrg under its org, newest first: each listing is one Query. */
export function reservationItem(reservation: Reservation, dueAt: string | undefined): Item {
  const sortKey = `${reservation.createdAt}#${reservation.id}`;
  return {
    ...reservationKeys.reservation(reservation.id),
    entity: 'reservation',
    kind: RESERVATION_KIND,
    kindSk: sortKey,
    orgPk: reservationsOfOrg(reservation.org),
    orgSk: sortKey,
    ...dueAttributes(reservationKeys.reservation(reservation.id).pk, dueAt),
    ...reservation,
  };
}

export const fromReservationItem = (item: Item): Reservation => strip<Reservation>(item);
