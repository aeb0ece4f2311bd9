import { envInt } from '../env.ts';
import { defaultMigrationOptions, migrationBench } from '../migration.ts';
import { definePart, dynamoOf } from '../part.ts';

export const migrationPart = definePart({
  name: 'migration',
  describe: "the data migration from release 0.1.0's layout: items a second against the same writes sent raw on a fresh DynamoDB Local",
  dynamodb: { serves: 'the table in 0.1.0 layout' },
  section: 'migration',
  options: (env) => ({
    machines: envInt(env, 'BENCH_MIGRATION_MACHINES', defaultMigrationOptions.machines),
    segments: envInt(env, 'BENCH_MIGRATION_SEGMENTS', defaultMigrationOptions.segments),
  }),
  run: (context, options) => migrationBench(dynamoOf(context).endpoint, context.id, options, context.progress),
  summaryKey: 'migration',
  summarize: (r) => ({
    unit: 'items a second; ratio: the migration over the same writes sent raw (same run, fresh DynamoDB Local), goal at most 1.5',
    items: r.items,
    migrated: r.migrated,
    items_per_s: r.items_per_s,
    floor_items_per_s: r.floor_items_per_s,
    over_floor: r.over_floor,
  }),
});
