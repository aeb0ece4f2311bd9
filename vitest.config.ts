import { defineConfig } from 'vitest/config';

/** Tiers that run without DynamoDB Local: pure domain, the services over the in-memory store, the reference agent. */
const withoutJava = ['test/unit/**/*.test.ts', 'test/service/**/*.test.ts', 'test/agent/**/*.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: keep files in parallel but bounded, they share one DynamoDB Local.
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'fast', include: withoutJava } },
      {
        extends: true,
        test: {
          name: 'dynamodb',
          include: ['test/**/*.test.ts'],
          // test/iam reads what this tier records: it runs after it, with vitest.iam.config.ts.
          exclude: [...withoutJava, 'test/iam/**'],
          // One DynamoDB Local for the tier, started only when a file of it runs.
          globalSetup: ['test/support/global-setup.ts'],
        },
      },
    ],
  },
});
