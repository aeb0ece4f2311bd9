import type { Change } from '#domain/core/change.ts';
import type { MetaInstance, ReplacementsInFlight } from '#domain/core/model.ts';
import { iso } from '#domain/core/time.ts';

// The writes every meta-instance decision builds on: its own record, and the site's replacements record.

const WAITS: ReadonlySet<MetaInstance['status']> = new Set(['Placing', 'Retrying']);

export function withMeta(meta: MetaInstance, next: Partial<MetaInstance>, now: Date): Change {
  const after: MetaInstance = { ...meta, ...next, updatedAt: iso(now) };
  // Waiting meta-instances are served in the order they started waiting.
  if (!WAITS.has(after.status)) after.waitingSince = undefined;
  else if (!WAITS.has(meta.status) || !meta.waitingSince) after.waitingSince = iso(now);
  return { metaInstances: [{ before: meta, after }], history: [] };
}

/** The site's replacements record as read, and which of its instances are still Provisioning (read with it). */
export interface ReplacementsView {
  record: ReplacementsInFlight | null;
  inFlight: string[];
}

/** The replacements record with this change's new instances added, and those no longer in flight dropped. */
export function replacementsAfter(view: ReplacementsView, change: Change): Change['replacements'] {
  const placed = (change.instances ?? []).filter((v) => v.before === null).map((v) => v.after.id);
  return { before: view.record, after: { instanceIds: [...view.inFlight, ...placed], version: view.record?.version ?? 0 } };
}
