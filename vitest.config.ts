import { defineConfig } from 'vitest/config';

/** Tiers that run without DynamoDB Local: pure domain, the services over the in-memory store, the reference agent. */
const inProcess = ['test/unit/**/*.test.ts', 'test/service/**/*.test.ts', 'test/agent/**/*.test.ts'];

/** The reference agent's tests of real processes: its daemon SIGKILLed and started again, ipmi_sim, hook scripts. */
const agentProcesses = ['config', 'crash-resume', 'daemon-contract', 'example-hooks', 'ipmi-driver'].map((name) => `test/agent/${name}.test.ts`);

/**
 * The e2e files whose sites run in a process of their own (a runner child, the CLI's, release 0.1.0 beside this one,
 * a reference agent): what they test is that process, not the order of the stream, so they run once, plainly.
 */
const ownProcesses = [
  'test/e2e/crash-*.test.ts',
  'test/e2e/local-runner.test.ts',
  'test/e2e/cli*.test.ts',
  'test/e2e/reference-agent.test.ts',
  'test/e2e/upgrade-*.test.ts',
];

/** The contention e2e files: run under every AWS semantics mode at once (docs/guide.md, "AWS semantics"). */
const contention = [
  'meta-instances',
  'meta-stress',
  'create-contention',
  'concurrency',
  'repair-workflow',
  'fuzz-model',
  'safety',
  'safety-repairs',
  'instance-lifecycle',
  'idempotency-keys',
].map((name) => `test/e2e/${name}.test.ts`);

/**
 * A tier on DynamoDB Local. Each runs its own (globalSetup), with its own stream chaos and AWS semantics from `env`;
 * a variable set in the shell wins, so `FLEETWARD_STREAM_CHAOS= npx vitest run test/e2e/x.test.ts` runs a file plainly.
 * Every site a file starts is its own (table, stream poller, timers) and is stopped whole by the file, so files share
 * a worker's modules (isolate: false): importing the site afresh for each file cost up to a fifth of the tier.
 */
const onDynamoDb = (name: string, include: string[], exclude: string[], env: Record<string, string> = {}) => ({
  extends: true as const,
  test: {
    name,
    include,
    exclude,
    globalSetup: ['test/support/global-setup.ts'],
    isolate: false,
    env: Object.fromEntries(Object.entries(env).map(([key, value]) => [key, process.env[key] ?? value])),
  },
});

/**
 * Every e2e file runs once in `npm test`, in the most hostile tier it stands: the contention files under AWS's
 * semantics, the others whose sites are in-process with the stream misdelivering, the rest plainly.
 */
export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores, shared by every tier of one run: files in parallel but bounded.
    maxWorkers: 2,
    // Transformed modules kept in node_modules between runs: a rerun skips the transform.
    experimental: { fsModuleCache: true },
    projects: [
      {
        extends: true,
        // These files share no state but the modules they import (pure domain, services over the in-memory store), so
        // one module graph per worker serves them all: re-importing zod, the AWS SDK and the route table for every
        // file took most of `npm run test:unit`'s time.
        test: { name: 'fast', include: inProcess, exclude: agentProcesses, isolate: false },
      },
      { extends: true, test: { name: 'agent', include: agentProcesses } },
      // test/iam reads what these tiers record: it runs after them, with vitest.iam.config.ts.
      onDynamoDb('dynamodb', ['test/browser/**/*.test.ts', 'test/cdk/**/*.test.ts', 'test/integration/**/*.test.ts', ...ownProcesses], []),
      onDynamoDb('chaos', ['test/e2e/**/*.test.ts'], [...ownProcesses, ...contention], { FLEETWARD_STREAM_CHAOS: 'duplicate,reorder,delay' }),
      onDynamoDb('aws', contention, [], { FLEETWARD_AWS_SEMANTICS: 'all' }),
    ],
  },
});
