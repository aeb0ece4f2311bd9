import * as z from 'zod';
import { capacityChanges, capacityReasons } from '#domain/core/vocabulary.ts';
import { pageQuery } from '#domain/core/schemas.ts';

// The capacity-events feed as a tenant reads it (docs/api.md "The org's capacity events"): its own entries, after a
// cursor, and nothing of another org.

/** A cursor is the `seq` of the last entry read, in decimal digits; `0` (or none) reads from the first entry. */
export const capacityCursor = /* @__PURE__ */ z
  .string()
  .regex(/^(0|[1-9][0-9]{0,14})$/, 'a cursor this feed returned')
  .meta({ description: 'The `cursor` of the previous answer; absent or `0`: from the first entry kept' });

export const capacityEventsQuery = /* @__PURE__ */ z.strictObject({
  since: capacityCursor.optional(),
  limit: pageQuery.limit,
});

export const capacityEventResponse = /* @__PURE__ */ z.object({
  id: z.string(),
  at: z.string(),
  machineId: z.string(),
  machineType: z.string(),
  change: z.enum(capacityChanges),
  reason: z.enum(capacityReasons),
});

export const capacityEventsResponse = /* @__PURE__ */ z.object({
  items: z.array(capacityEventResponse),
  cursor: capacityCursor.meta({ description: 'Pass it as `since` to read on; the same cursor when nothing new has come' }),
});

export type CapacityEventsView = z.infer<typeof capacityEventsResponse>;
