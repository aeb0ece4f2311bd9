import { rmSync } from 'node:fs';
import { resolve } from 'node:path';
import type { TestProject } from 'vitest/node';
import { AWS_CALL_LOG_ENV } from '#local/aws-call-recorder.ts';
import { startDynamoDbLocal } from '#local/dynamodb-local.ts';
import { parseStreamChaos, type StreamChaosConfig } from '#local/stream-chaos.ts';
import { parseAwsSemantics, type AwsSemanticsConfig } from '#local/aws-semantics/config.ts';
import { DEFAULT_AWS_CALL_LOG } from '#test/support/iam/recorded-calls.ts';

// One DynamoDB Local for each tier of the test run (vitest.config.ts); each test file makes its own uniquely named
// tables on it. The tier's stream chaos and AWS semantics come from its `env`, or the shell's.
export default async function setup(project: TestProject) {
  const env = { ...process.env, ...project.config.env };
  // One seed for the tier, printed once, so a failing chaos run can be replayed as a whole.
  const streamChaos = parseStreamChaos(env) ?? null;
  if (streamChaos) {
    console.log(`${project.name}: stream chaos ${streamChaos.modes.join(',')}: FLEETWARD_STREAM_CHAOS_SEED=${streamChaos.seed} replays this tier`);
  }
  project.provide('streamChaos', streamChaos);
  const awsSemantics = parseAwsSemantics(env) ?? null;
  if (awsSemantics) {
    console.log(`${project.name}: AWS semantics ${awsSemantics.modes.join(',')}: FLEETWARD_AWS_SEMANTICS_SEED=${awsSemantics.seed} replays this tier`);
  }
  project.provide('awsSemantics', awsSemantics);
  project.provide('awsCallLogDir', awsCallLogDir(project.name));
  // Every test file's tables have streams: with the stream log indexed, a file's writes do not get slower with the
  // stream records of every file before it.
  const dynamo = await startDynamoDbLocal({ indexStreamLog: true });
  project.provide('dynamoEndpoint', dynamo.endpoint);
  return async () => dynamo.stop();
}

/**
 * Every site of the run, in-process or a runner child, records its functions' AWS calls for the IAM test
 * (test/iam), each tier in a folder of its own. A directory the caller names is theirs: `npm test` clears it once and
 * every tier adds to it. Otherwise a tier's folder is started afresh, so that it never mixes in calls of older code.
 */
function awsCallLogDir(tier: string): string {
  const named = process.env[AWS_CALL_LOG_ENV];
  if (named) return resolve(named, tier);
  const dir = resolve(DEFAULT_AWS_CALL_LOG, tier);
  rmSync(dir, { recursive: true, force: true });
  return dir;
}

declare module 'vitest' {
  export interface ProvidedContext {
    dynamoEndpoint: string;
    streamChaos: StreamChaosConfig | null;
    awsSemantics: AwsSemanticsConfig | null;
    /** The directory the run's sites record their AWS calls in (local/aws-call-recorder.ts). */
    awsCallLogDir: string;
  }
}
