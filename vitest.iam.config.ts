import { defineConfig } from 'vitest/config';

/**
 * The IAM check (test/iam): it reads the AWS calls the e2e suite recorded, so it runs on its own, after the suite
 * (`npm test` runs it last; `npm run test:iam` alone checks the recordings of the last e2e run).
 */
export default defineConfig({
  test: {
    name: 'iam',
    include: ['test/iam/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
