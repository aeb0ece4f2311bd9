import type { Instance } from '#domain/core/model.ts';
import type { FleetStore } from '#store/port.ts';

/**
 * The instances a meta-instance's record lists as its members (`memberIds`, in its order), read by id strongly
 * consistent: what its reconciler decides on. A member read Terminated stays listed until the next pass drops it.
 */
export async function recordedMembers(store: FleetStore, metaInstanceId: string): Promise<Instance[]> {
  const meta = await store.getMetaInstance(metaInstanceId);
  if (!meta || meta.memberIds.length === 0) return [];
  const { instances } = await store.getRecords({ instances: meta.memberIds });
  return meta.memberIds.flatMap((id) => instances.get(id) ?? []);
}
