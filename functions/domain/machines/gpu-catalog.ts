import type { SiteConfig } from '#config/site-config.ts';
import type { Catalog } from '#domain/machines/catalog.ts';

/** GPUs in one machine of a type, by `[catalog] gpus_per_machine`: a type the config does not name counts 0. */
export const gpusPerMachine = (config: SiteConfig, machineType: string): number => config.catalog.gpus_per_machine[machineType] ?? 0;

/** The site's machine types that `[catalog] gpus_per_machine` does not name: their GPUs count 0, which a provider should see. */
export const typesWithoutGpuCount = (config: SiteConfig, catalog: Catalog): string[] =>
  Object.keys(catalog.types)
    .filter((type) => config.catalog.gpus_per_machine[type] === undefined)
    .sort();
