import type { AppContext } from '#runtime/context.ts';
import { fromInstanceItem } from '#store/aggregates/instance-items.ts';
import { fromMaintenanceItem } from '#store/aggregates/maintenance-items.ts';
import { fromMachineItem } from '#store/aggregates/machine-items.ts';
import { fromMetaInstanceItem } from '#store/aggregates/meta-instance-items.ts';
import { fromReservationItem } from '#store/aggregates/reservation-items.ts';
import { fromRosterBucketItem, fromStaleCheckItem } from '#store/aggregates/roster-items.ts';
import { keys } from '#store/keys.ts';
import type { RecordKind, RecordTypes } from '#reconcilers/reconciler.ts';

// Where the watched records live in the table: their keys (what the stream filters match), how an item or a stream
// image becomes the record, and how to read one.

interface RecordSource<K extends RecordKind> {
  /** The key of the record with an empty id: pk is the prefix, sk exact. */
  key: { pk: string; sk: string };
  decode(item: Record<string, unknown>): RecordTypes[K];
  get(store: AppContext['store'], id: string): Promise<RecordTypes[K] | null>;
}

export const recordSources: { [K in RecordKind]: RecordSource<K> } = {
  machine: { key: keys.machine(''), decode: fromMachineItem, get: (store, id) => store.getMachine(id) },
  instance: { key: keys.instance(''), decode: fromInstanceItem, get: (store, id) => store.getInstance(id) },
  'meta-instance': { key: keys.metaInstance(''), decode: fromMetaInstanceItem, get: (store, id) => store.getMetaInstance(id) },
  'roster-bucket': { key: keys.rosterBucket(''), decode: fromRosterBucketItem, get: async (store, id) => (await store.getRosterBuckets([id])).get(id) ?? null },
  'stale-check': { key: keys.staleCheck(''), decode: fromStaleCheckItem, get: (store, id) => store.getStaleCheck(id) },
  maintenance: { key: keys.maintenance(''), decode: fromMaintenanceItem, get: async (store, id) => (await store.getMaintenances([id])).get(id) ?? null },
  reservation: { key: keys.reservation(''), decode: fromReservationItem, get: (store, id) => store.getReservation(id) },
};

/** Which watched record a table key names, and its id; null for anything else (history, site items, tenants). */
export function recordOfKey(pk: string, sk: string): { kind: RecordKind; id: string } | null {
  for (const [kind, source] of Object.entries(recordSources) as Array<[RecordKind, RecordSource<RecordKind>]>) {
    if (pk.startsWith(source.key.pk) && sk === source.key.sk) return { kind, id: pk.slice(source.key.pk.length) };
  }
  return null;
}
