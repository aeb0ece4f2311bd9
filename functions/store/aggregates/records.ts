import type { Catalog } from '#domain/machines/catalog.ts';
import type { SiteHeartbeat } from '#domain/machines/heartbeat.ts';
import type { Instance, Machine, MetaInstance, ReplacementsInFlight } from '#domain/core/model.ts';
import type { SafetyState } from '#domain/repair/safety.ts';
import type { Aggregate } from '#store/aggregate.ts';
import { fromInstanceItem, instanceKey } from '#store/aggregates/instance-items.ts';
import { fromMachineItem, machineKey } from '#store/aggregates/machine-items.ts';
import { fromMetaInstanceItem, metaInstanceKey } from '#store/aggregates/meta-instance-items.ts';
import { catalogOf, replacementsOf, safetyOf, siteHeartbeatOf, siteKeys } from '#store/aggregates/site-items.ts';
import { tableKeyOf, type Item, type TableKey } from '#store/item-access.ts';

// A decision's load: records of the aggregates a decision spans, read together.

/** What `getRecords` reads: ids by kind, and the site's catalog, heartbeat, safety state or replacements when asked for. */
export interface RecordIds {
  machines?: readonly string[] | undefined;
  instances?: readonly string[] | undefined;
  metaInstances?: readonly string[] | undefined;
  catalog?: boolean | undefined;
  siteHeartbeat?: boolean | undefined;
  safety?: boolean | undefined;
  replacements?: boolean | undefined;
}

/** What `getRecords` found, by id; `catalog`, `siteHeartbeat` and `safety` are present only when asked for. */
export interface Records {
  machines: Map<string, Machine>;
  instances: Map<string, Instance>;
  metaInstances: Map<string, MetaInstance>;
  catalog?: Catalog;
  siteHeartbeat?: SiteHeartbeat | null;
  safety?: SafetyState | null;
  replacements?: ReplacementsInFlight | null;
}

export interface RecordsStore {
  /**
   * Records of several kinds at once, in ONE strongly consistent read (BatchGetItem; more than 100 keys take one
   * per 100): for a load that knows the ids of everything it needs up front. Those not found are left out of the
   * maps; the catalog (empty when none is stored) and the site heartbeat (null when none) only when asked for.
   */
  getRecords(ids: RecordIds): Promise<Records>;
}

export const records: Aggregate<RecordsStore> = {
  store: ({ items, layout }) => ({
    async getRecords(ids) {
      const wanted = new Map<string, TableKey>();
      const want = (key: TableKey) => wanted.set(tableKeyOf(key), key);
      for (const id of ids.machines ?? []) want(machineKey(id));
      for (const id of ids.instances ?? []) want(instanceKey(id));
      for (const id of ids.metaInstances ?? []) want(metaInstanceKey(id));
      if (ids.catalog) want(siteKeys.siteCatalog);
      if (ids.siteHeartbeat) want(siteKeys.siteHeartbeat);
      if (ids.safety) want(siteKeys.siteSafety);
      if (ids.replacements) want(siteKeys.siteReplacements);
      if (ids.catalog || ids.siteHeartbeat || ids.safety) await layout.legacyReads();
      const found = new Map((await items.getItems([...wanted.values()])).map((item) => [tableKeyOf(item), item]));
      const decode = <T>(list: readonly string[] | undefined, key: (id: string) => TableKey, from: (item: Item) => T): Map<string, T> => {
        const out = new Map<string, T>();
        for (const id of list ?? []) {
          const item = found.get(tableKeyOf(key(id)));
          if (item) out.set(id, from(item));
        }
        return out;
      };
      const metas = await layout.withMembers([...decode(ids.metaInstances, metaInstanceKey, fromMetaInstanceItem).values()]);
      return {
        machines: decode(ids.machines, machineKey, fromMachineItem),
        instances: decode(ids.instances, instanceKey, fromInstanceItem),
        metaInstances: new Map(metas.map((meta) => [meta.id, meta])),
        ...(ids.catalog ? { catalog: catalogOf(found.get(tableKeyOf(siteKeys.siteCatalog))) } : {}),
        ...(ids.siteHeartbeat ? { siteHeartbeat: siteHeartbeatOf(found.get(tableKeyOf(siteKeys.siteHeartbeat))) } : {}),
        ...(ids.safety ? { safety: safetyOf(found.get(tableKeyOf(siteKeys.siteSafety))) } : {}),
        ...(ids.replacements ? { replacements: replacementsOf(found.get(tableKeyOf(siteKeys.siteReplacements))) } : {}),
      };
    },
  }),
};
