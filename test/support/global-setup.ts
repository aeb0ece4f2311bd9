import type { TestProject } from 'vitest/node';
import { startDynamoDbLocal } from '#local/dynamodb-local.ts';
import { parseStreamChaos, type StreamChaosConfig } from '#local/stream-chaos.ts';

// One DynamoDB Local for the whole test run; each test file makes its own uniquely named tables on it.
export default async function setup(project: TestProject) {
  // One seed for the run, printed once, so a failing chaos run can be replayed as a whole.
  const streamChaos = parseStreamChaos(process.env) ?? null;
  if (streamChaos) {
    console.log(`stream chaos ${streamChaos.modes.join(',')}: FLEETWARD_STREAM_CHAOS_SEED=${streamChaos.seed} replays this run`);
  }
  project.provide('streamChaos', streamChaos);
  // Every test file's tables have streams: with the stream log indexed, a file's writes do not get slower with the
  // stream records of every file before it.
  const dynamo = await startDynamoDbLocal({ indexStreamLog: true });
  project.provide('dynamoEndpoint', dynamo.endpoint);
  return async () => dynamo.stop();
}

declare module 'vitest' {
  export interface ProvidedContext {
    dynamoEndpoint: string;
    streamChaos: StreamChaosConfig | null;
  }
}
