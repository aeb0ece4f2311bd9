import { defineConfig } from 'vitest/config';

/** Tiers that run without DynamoDB Local: pure domain, the services over the in-memory store, the reference agent. */
const withoutJava = ['test/unit/**/*.test.ts', 'test/service/**/*.test.ts', 'test/agent/**/*.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: keep files in parallel but bounded, they share one DynamoDB Local.
    maxWorkers: 2,
    // Transformed modules kept in node_modules between runs: a rerun, and the tiers after the first, skip the transform.
    experimental: { fsModuleCache: true },
    projects: [
      {
        extends: true,
        // These files share no state but the modules they import (pure domain, services over the in-memory store), so
        // one module graph per worker serves them all: re-importing zod, the AWS SDK and the route table for every
        // file took most of `npm run test:unit`'s time.
        test: { name: 'fast', include: withoutJava, isolate: false },
      },
      {
        extends: true,
        test: {
          name: 'dynamodb',
          include: ['test/**/*.test.ts'],
          // test/iam reads what this tier records: it runs after it, with vitest.iam.config.ts.
          exclude: [...withoutJava, 'test/iam/**'],
          // One DynamoDB Local for the tier, started only when a file of it runs.
          globalSetup: ['test/support/global-setup.ts'],
          // Every site a file starts is its own (table, stream poller, timers) and is stopped whole by the file, so
          // files can share a worker's modules: importing the site afresh for each file cost up to a fifth of the tier.
          isolate: false,
        },
      },
    ],
  },
});
