import type { Reservation } from '#domain/reservations/reservations.ts';
import type { Aggregate } from '#store/aggregate.ts';
import { fromReservationItem, RESERVATION_KIND, reservationItem, reservationKeys, reservationsOfOrg } from '#store/aggregates/reservation-items.ts';
import type { Page } from '#store/paging.ts';
import type { PageRequest } from '#store/port.ts';
import { indexes } from '#store/table.ts';

export interface ReservationStore {
  getReservation(id: string): Promise<Reservation | null>;
  /** Newest first; one org's, or the whole site's when `org` is null. */
  listReservations(org: string | null, page: PageRequest): Promise<Page<Reservation>>;
}

export const reservations: Aggregate<ReservationStore> = {
  writes: (change, to) => {
    for (const pair of change.reservations ?? []) to.guarded(pair, (reservation) => reservationItem(reservation, to.due.reservation(reservation)));
  },
  store: ({ items }) => ({
    async getReservation(id) {
      const item = await items.getItem(reservationKeys.reservation(id));
      return item ? fromReservationItem(item) : null;
    },
    async listReservations(org, page) {
      const result = await items.queryItems(
        { index: org ? indexes.byOrg : indexes.byKind, partition: org ? reservationsOfOrg(org) : RESERVATION_KIND, descending: true, limit: page.limit },
        page.nextToken,
      );
      return { items: result.items.map(fromReservationItem), nextToken: result.nextToken };
    },
  }),
};
