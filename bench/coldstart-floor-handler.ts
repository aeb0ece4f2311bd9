// The cold start floor (bench/coldstart.ts): a Lambda handler that does only what the first invoke of every
// Fleetward function must do, one DynamoDB request through the AWS SDK v3, with none of Fleetward's code or
// Powertools. Bundled as the stack bundles its functions, it is the least any of them could cost on this host.

import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';

const client = DynamoDBDocumentClient.from(new DynamoDBClient({}));

export const handler = async () => {
  const { Item } = await client.send(new GetCommand({ TableName: process.env.TABLE_NAME, Key: { pk: 'MACHINE#coldstart-floor', sk: '#MACHINE' } }));
  return { found: Item !== undefined };
};
