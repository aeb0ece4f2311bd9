import * as z from 'zod';
import { listOf } from '#domain/core/responses.ts';

// A reservation as the API shows it (API.md "Reservations"), to the provider and to the org that holds it alike.

const reservationHealthResponse = /* @__PURE__ */ z.object({
  machines: z.number().int(),
  healthy: z.number().int(),
  inUse: z.number().int(),
  quarantined: z.number().int(),
});

export const reservationResponse = /* @__PURE__ */ z.object({
  id: z.string(),
  org: z.string(),
  machineType: z.string(),
  name: z.string().optional(),
  machineIds: z.array(z.string()),
  nvlinkDomains: z.array(z.string()).optional(),
  state: z.enum(['Pending', 'Active', 'Failed', 'Released']),
  /** While Pending, and on Failed: how many machines it asked for. */
  wanted: z.number().int().optional(),
  /** On Failed: how many of them were free when it fell short. */
  free: z.number().int().optional(),
  createdAt: z.string(),
  releasedAt: z.string().optional(),
  health: reservationHealthResponse,
});

export const reservationListResponse = /* @__PURE__ */ listOf(reservationResponse);

export type ReservationView = z.infer<typeof reservationResponse>;
