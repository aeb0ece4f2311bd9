import type { Aggregate } from '#store/aggregate.ts';
import { audit } from '#store/aggregates/audit.ts';
import { capacity } from '#store/aggregates/capacity.ts';
import { due } from '#store/aggregates/due.ts';
import { events } from '#store/aggregates/events.ts';
import { fleetSummary } from '#store/aggregates/fleet-summary.ts';
import { instances } from '#store/aggregates/instances.ts';
import { machines } from '#store/aggregates/machines.ts';
import { maintenance } from '#store/aggregates/maintenance.ts';
import { metaInstances } from '#store/aggregates/meta-instances.ts';
import { quotaUsage } from '#store/aggregates/quota-usage.ts';
import { records } from '#store/aggregates/records.ts';
import { reservations } from '#store/aggregates/reservations.ts';
import { roster } from '#store/aggregates/roster.ts';
import { site } from '#store/aggregates/site.ts';

/**
 * Every part of the store, in the order a decision's transaction writes their records. Both adapters compose this
 * list (item-store.ts), and FleetStore (port.ts) is what it adds up to.
 *
 * To add a record kind: write `aggregates/<kind>-items.ts` (its keys, index attributes and codec: the item a record
 * becomes and back) and `aggregates/<kind>.ts` (its store's interface, and an Aggregate: the writes of its records
 * in a decision, from the Change, and its reads over StoreCore), add its contract tests to
 * test/support/store-contract/, and list it here. Neither adapter changes.
 */
export const aggregates = [
  machines,
  instances,
  site,
  metaInstances,
  roster,
  maintenance,
  reservations,
  fleetSummary,
  capacity,
  events,
  audit,
  quotaUsage,
  records,
  due,
];

type StoreOf<A> = A extends Aggregate<infer Store> ? Store : never;
type Intersection<U> = (U extends unknown ? (part: U) => void : never) extends (whole: infer I) => void ? I : never;

/** What the listed aggregates' stores add up to. */
export type AggregateStores = Intersection<StoreOf<(typeof aggregates)[number]>>;
