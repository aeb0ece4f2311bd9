import type { Item } from '#store/item-access.ts';

/** Where a migration stands, as `GET /admin/migrations` shows it. */
export interface MigrationProgress {
  id: number;
  name: string;
  state: 'pending' | 'running' | 'done' | 'failed';
  itemsDone: number;
  itemsTotal?: number;
  startedAt?: string;
  finishedAt?: string;
  /** When it will be done at the pace so far, while it runs. */
  estimatedDoneAt?: string;
  /** Items rewritten (the rest were already in the current layout). */
  itemsMigrated?: number;
  error?: string;
}

/** One Scan segment's checkpoint: where the next page starts, and what it has done. */
export interface SegmentCheckpoint {
  segment: number;
  startKey: Record<string, unknown> | null;
  done: boolean;
  itemsDone: number;
  itemsMigrated: number;
  version: number;
}

export const checkpointOf = (item: Item): SegmentCheckpoint => ({
  segment: Number(item.segment),
  startKey: (item.startKey as Record<string, unknown> | undefined) ?? null,
  done: item.done === true,
  itemsDone: Number(item.itemsDone ?? 0),
  itemsMigrated: Number(item.itemsMigrated ?? 0),
  version: Number(item.version ?? 0),
});

/** A migration's progress from its own item and its segments' checkpoints: the items done are the segments' sum. */
export function progressOf(migration: { id: number; name: string }, head: Item | undefined, segments: SegmentCheckpoint[], now: Date): MigrationProgress {
  if (!head) return { id: migration.id, name: migration.name, state: 'pending', itemsDone: 0 };
  const itemsDone = segments.reduce((sum, s) => sum + s.itemsDone, 0);
  const itemsMigrated = segments.reduce((sum, s) => sum + s.itemsMigrated, 0);
  const state = head.state as MigrationProgress['state'];
  const itemsTotal = typeof head.itemsTotal === 'number' ? Math.max(head.itemsTotal, itemsDone) : undefined;
  const startedAt = String(head.startedAt);
  const elapsed = now.getTime() - Date.parse(startedAt);
  const estimate =
    state === 'running' && itemsTotal !== undefined && itemsDone > 0 && elapsed > 0
      ? new Date(now.getTime() + ((itemsTotal - itemsDone) * elapsed) / itemsDone).toISOString()
      : undefined;
  return {
    id: migration.id,
    name: migration.name,
    state,
    itemsDone,
    itemsMigrated,
    ...(itemsTotal === undefined ? {} : { itemsTotal }),
    startedAt,
    ...(typeof head.finishedAt === 'string' ? { finishedAt: head.finishedAt } : {}),
    ...(estimate ? { estimatedDoneAt: estimate } : {}),
    ...(typeof head.error === 'string' ? { error: head.error } : {}),
  };
}
