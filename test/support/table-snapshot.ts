import { capacityHistoryPartition } from '#store/aggregates/capacity-items.ts';
import { keys } from '#store/keys.ts';
import { SWEEP_LEASE } from '#reconcilers/sweep.ts';
import { scanTable, type TestSite } from './local-site.ts';

// A dump of a site's tables, to show that a request changed nothing. It leaves out only SITE#HEARTBEAT (the
// simulated agent keeps beating, and a beat with an unchanged roster rewrites nothing but that item's time), the
// sweep's lease (every run takes it and gives it back, whatever it finds) and the outbox fallback's cursor (every run
// moves it on as time passes).

export type Snapshot = { table: Map<string, string>; idempotency: Map<string, string> };

/** Keys sorted at every level, so two dumps of the same items compare equal as strings. */
const canonical = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(canonical)
    : value instanceof Set
      ? [...value].map(canonical).sort()
      : value && typeof value === 'object'
        ? Object.fromEntries(
            Object.entries(value)
              .sort(([a], [b]) => a.localeCompare(b))
              .map(([k, v]) => [k, canonical(v)]),
          )
        : value;

export async function snapshot(site: TestSite): Promise<Snapshot> {
  const toMap = (items: Record<string, unknown>[], key: (item: Record<string, unknown>) => string) =>
    new Map(items.map((item) => [key(item), JSON.stringify(canonical(item))]));
  const left = [keys.siteHeartbeat, keys.siteLease(SWEEP_LEASE), keys.siteOutboxCursor];
  const timeDriven = (item: Record<string, unknown>) =>
    left.some((key) => item.pk === key.pk && item.sk === key.sk) || String(item.pk).startsWith(capacityHistoryPartition(''));
  const table = (await scanTable(site)).filter((item) => !timeDriven(item));
  const idempotency = await scanTable(site, 'idempotencyTable');
  return { table: toMap(table, (i) => `${i.pk} | ${i.sk}`), idempotency: toMap(idempotency, (i) => String(i.id)) };
}

export function difference(before: Map<string, string>, after: Map<string, string>) {
  return {
    added: [...after.keys()].filter((k) => !before.has(k)),
    removed: [...before.keys()].filter((k) => !after.has(k)),
    changed: [...after.keys()]
      .filter((k) => before.has(k) && before.get(k) !== after.get(k))
      .map((k) => ({ key: k, before: before.get(k), after: after.get(k) })),
  };
}

export const unchanged = { added: [], removed: [], changed: [] };
