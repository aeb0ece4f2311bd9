import { IdempotencyPersistenceLayerError } from '@aws-lambda-powertools/idempotency';
import { Logger } from '@aws-lambda-powertools/logger';
import { DynamoDBServiceException } from '@aws-sdk/client-dynamodb';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { createApiHandler, type ApiEvent } from '#http/api-handler.ts';
import { classifyError } from '#http/classify-error.ts';
import { ProblemError } from '#http/problem.ts';
import { defineRoute } from '#http/route.ts';
import { createDocumentClient, UnmarshallableInputError } from '#store/client.ts';
import { ThrottledError } from '#store/port.ts';

// Which errors are the caller's (4xx) and which are ours (500): decided by what raised them, not by guessing.

const serviceError = (name: string, fault: 'client' | 'server' = 'client') =>
  new DynamoDBServiceException({ name, $fault: fault, $metadata: { httpStatusCode: fault === 'client' ? 400 : 500 }, message: `${name} from DynamoDB` });

const stampedLikeARetry = (error: Error) => Object.assign(error, { $metadata: { attempts: 3 } });

describe('classifyError', () => {
  it('passes refusals through as they are', () => {
    const refusal = new ProblemError(409, 'no-capacity', 'no machine free');
    expect(classifyError(refusal)).toBe(refusal);
  });

  it.each([
    ['a value the document client could not marshall', new UnmarshallableInputError('Number 12345678901234567000 is greater than Number.MAX_SAFE_INTEGER')],
    ["DynamoDB's ValidationException", serviceError('ValidationException')],
    ["DynamoDB's SerializationException", serviceError('SerializationException')],
  ])('%s is the caller’s 422 invalid-request', (_name, error) => {
    expect(classifyError(error)).toMatchObject({ status: 422, code: 'invalid-request' });
  });

  it.each(['ThrottlingException', 'ProvisionedThroughputExceededException', 'RequestLimitExceeded'])('%s is a 503 to retry', (name) => {
    expect(classifyError(serviceError(name))).toMatchObject({ status: 503, code: 'throttled' });
  });

  it('a throttled call of the idempotency record (Powertools wraps it) is a 503 to retry; another failure of it is ours', () => {
    const wrapped = (cause: Error) => new IdempotencyPersistenceLayerError('Failed to save in progress record to idempotency store', { cause });
    expect(classifyError(wrapped(serviceError('ProvisionedThroughputExceededException')))).toMatchObject({ status: 503, code: 'throttled' });
    expect(classifyError(wrapped(serviceError('ThrottlingException')))).toMatchObject({ status: 503, code: 'throttled' });
    expect(classifyError(wrapped(serviceError('InternalServerError', 'server')))).toBeUndefined();
  });

  it.each([
    ['a TypeError (our bug)', new TypeError("Cannot read properties of undefined (reading 'id')")],
    ['an Error merely named ValidationException, not from AWS', Object.assign(new Error('bad'), { name: 'ValidationException' })],
    ['a refused connection after the retries', stampedLikeARetry(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }))],
    ["DynamoDB's ResourceNotFoundException (a missing table: our deployment)", serviceError('ResourceNotFoundException')],
    ["DynamoDB's InternalServerError", serviceError('InternalServerError', 'server')],
    ['a thrown string', 'boom'],
  ])('%s is a genuine fault (no problem: a 500)', (_name, error) => {
    expect(classifyError(error)).toBeUndefined();
  });
});

describe('the document client', () => {
  const client = createDocumentClient('http://127.0.0.1:1');
  const query = (startKey: Record<string, unknown>) =>
    client.send(
      new QueryCommand({ TableName: 't', KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': 'p' }, ExclusiveStartKey: startKey }),
    );
  const errorOf = (promise: Promise<unknown>) =>
    promise.then(
      () => expect.unreachable('expected a failure'),
      (error: unknown) => error,
    );

  it.each([
    ['a number beyond 2^53', { pk: 2 ** 64 }],
    ['an infinite number', { pk: Number.POSITIVE_INFINITY }],
  ])('tags a value it cannot marshall (%s) before anything is sent: a 422', async (_name, startKey) => {
    const error = await errorOf(query(startKey));
    expect(error).toBeInstanceOf(UnmarshallableInputError);
    expect(classifyError(error)).toMatchObject({ status: 422 });
  });

  it('leaves a failure to reach DynamoDB alone: a 500', async () => {
    const error = await errorOf(query({ pk: 'p', sk: 's' }));
    expect(error).not.toBeInstanceOf(UnmarshallableInputError);
    expect(classifyError(error)).toBeUndefined();
  });
});

describe('the API handler', () => {
  let thrown: unknown;
  const handler = createApiHandler(
    [
      defineRoute({
        operationId: 'throws',
        method: 'GET',
        path: '/throws',
        roles: 'public',
        summary: 'throws what the test sets',
        responses: { 200: null },
        handle: async () => {
          throw thrown;
        },
      }),
    ],
    {} as never,
    { logger: new Logger({ logLevel: 'SILENT' }) },
  );
  const event = {
    version: '2.0',
    routeKey: '$default',
    rawPath: '/throws',
    rawQueryString: '',
    headers: {},
    isBase64Encoded: false,
    requestContext: { requestId: 'req-1', http: { method: 'GET', path: '/throws' } },
  } as unknown as ApiEvent;

  it.each([
    [serviceError('ValidationException'), 422, 'invalid-request'],
    [new UnmarshallableInputError('Special numeric value Infinity is not allowed'), 422, 'invalid-request'],
    [serviceError('ProvisionedThroughputExceededException'), 503, 'throttled'],
    [new ThrottledError('throttled for the whole retry budget'), 503, 'throttled'],
    [new TypeError('our bug'), 500, 'internal-error'],
  ])('answers %s as %i %s problem+json', async (error, status, code) => {
    thrown = error;
    const result = await handler(event, { awsRequestId: 'req-1' } as Context);
    expect(result.statusCode).toBe(status);
    expect(result.headers?.['content-type']).toBe('application/problem+json');
    expect(JSON.parse(result.body!)).toMatchObject({ status, code });
    // A 503 says when to come back; nothing else does.
    expect(result.headers?.['retry-after']).toBe(status === 503 ? '1' : undefined);
  });
});
