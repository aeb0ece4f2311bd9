import { reservationListResponse, reservationResponse } from '#domain/reservations/reservation-responses.ts';
import { createReservationBody, emptyQuery, listQuery, params } from '#domain/core/schemas.ts';
import { createReservation, listReservations, releaseReservation, showReservation } from '#services/reservations.ts';
import { defineRoute, listResult, type Route } from '#http/route.ts';

const admin = '/admin/reservations';

/** Capacity reservations (API.md "Reservations"): the provider reserves, lists, shows and releases. */
export const adminReservationRoutes: Route[] = [
  defineRoute({
    operationId: 'create-reservation',
    method: 'POST',
    path: admin,
    roles: ['provider-admin'],
    summary: 'Reserve machines for one org, all or none: by count, by machine ids or by whole NVLink domains',
    query: emptyQuery,
    body: createReservationBody,
    bodyRequired: true,
    responses: { 201: reservationResponse, 202: reservationResponse },
    errors: [
      [409, 'insufficient-capacity'],
      [422, 'unknown-machine-type'],
      [422, 'unknown-nvlink-domain'],
      [422, 'reservation-too-large'],
    ],
    handle: async ({ requester, body }, ctx) => {
      const reservation = await createReservation(ctx, body, requester);
      return reservation.state === 'Pending' ? { status: 202, body: reservation } : { status: 201, body: reservation };
    },
  }),
  defineRoute({
    operationId: 'list-reservations',
    method: 'GET',
    path: admin,
    roles: ['provider-admin'],
    summary: "Every org's reservations, newest first",
    query: listQuery,
    responses: { 200: reservationListResponse },
    handle: async ({ query }, ctx) => {
      const page = await listReservations(ctx, null, query);
      return listResult(page.items, page.nextToken);
    },
  }),
  defineRoute({
    operationId: 'get-reservation',
    method: 'GET',
    path: `${admin}/{id}`,
    roles: ['provider-admin'],
    summary: 'One reservation, with its health',
    params: params.reservation,
    query: emptyQuery,
    responses: { 200: reservationResponse },
    handle: async ({ params: p }, ctx) => ({ status: 200, body: await showReservation(ctx, p.id) }),
  }),
  defineRoute({
    operationId: 'release-reservation',
    method: 'DELETE',
    path: `${admin}/{id}`,
    roles: ['provider-admin'],
    summary: 'Release: the machines go back to the shared pool as they come free',
    params: params.reservation,
    query: emptyQuery,
    responses: { 200: reservationResponse },
    errors: [[409, 'reservation-failed']],
    handle: async ({ params: p, requester }, ctx) => ({ status: 200, body: await releaseReservation(ctx, p.id, requester) }),
  }),
];
