import { defineConfig } from 'vitest/config';

/**
 * The stream-chaos rerun (`npm run test:chaos`, in `npm test`): the e2e suite once more with the stream misdelivering,
 * but for the crash tests, the runner's process tests, the CLI's, the reference agent's and the upgrade's. Those start
 * a runner or an agent in a child process of its own, or check what a command prints: the stream's order is not what
 * they test, and they are the suite's slowest.
 */
export default defineConfig({
  test: {
    name: 'dynamodb',
    include: ['test/e2e/**/*.test.ts'],
    exclude: [
      'test/e2e/crash-*.test.ts',
      'test/e2e/local-runner.test.ts',
      'test/e2e/cli*.test.ts',
      'test/e2e/reference-agent.test.ts',
      'test/e2e/upgrade-*.test.ts',
    ],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    maxWorkers: 2,
    globalSetup: ['test/support/global-setup.ts'],
    // As in the main tier (vitest.config.ts): each file's sites are its own, so files share a worker's modules.
    isolate: false,
  },
});
