import type { TestProject } from 'vitest/node';
import { startDynamoDbLocal } from '#local/dynamodb-local.ts';

// One DynamoDB Local for the whole test run; each test file makes its own uniquely named tables on it.
export default async function setup(project: TestProject) {
  const dynamo = await startDynamoDbLocal();
  project.provide('dynamoEndpoint', dynamo.endpoint);
  return async () => dynamo.stop();
}

declare module 'vitest' {
  export interface ProvidedContext {
    dynamoEndpoint: string;
  }
}
