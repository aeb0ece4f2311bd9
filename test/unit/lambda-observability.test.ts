import type { Context } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { withTracingLogsAndMetrics, powertoolsMetrics, sharedLogger, sharedMetrics } from '#handlers/lambda-context.ts';

// What a deployed entry point writes to stdout (CloudWatch Logs) through the Powertools middlewares.

const context = {
  functionName: 'fleetward-api',
  functionVersion: '$LATEST',
  invokedFunctionArn: 'arn:aws:lambda:eu-west-1:123456789012:function:fleetward-api',
  memoryLimitInMB: '1024',
  awsRequestId: 'lambda-request-1',
  getRemainingTimeInMillis: () => 10_000,
} as unknown as Context;

function captureStdout(): () => Array<Record<string, any>> {
  const written: string[] = [];
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => (written.push(String(chunk)), true));
  return () =>
    written
      .join('')
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, any>);
}

/** Everything written to stdout and stderr, line by line (what CloudWatch Logs would get). */
function captureOutput(): () => string[] {
  const written: string[] = [];
  const keep = (chunk: string | Uint8Array) => (written.push(String(chunk)), true);
  vi.spyOn(process.stdout, 'write').mockImplementation(keep);
  vi.spyOn(process.stderr, 'write').mockImplementation(keep);
  return () => written.join('').split('\n').filter(Boolean);
}

afterEach(() => vi.restoreAllMocks());

describe('Lambda entry points with the Powertools middlewares', () => {
  it('log with the invocation context and the API request id as correlation id, and flush metrics at the end', async () => {
    const lines = captureStdout();
    const handler = withTracingLogsAndMetrics(
      async () => {
        sharedLogger.info('inside');
        powertoolsMetrics(sharedMetrics).count('CreateAttempts', 2);
        powertoolsMetrics(sharedMetrics).count('CreateFailuresByOutcome', 1, { outcome: 'timeout' });
        return { statusCode: 200 };
      },
      { correlationIdOf: (event: { requestContext: { requestId: string } }) => event.requestContext.requestId },
    );
    expect(await handler({ requestContext: { requestId: 'api-request-1' } }, context)).toEqual({ statusCode: 200 });

    const logged = lines();
    expect(logged).toContainEqual(
      expect.objectContaining({ message: 'inside', correlation_id: 'api-request-1', function_name: 'fleetward-api', function_request_id: 'lambda-request-1' }),
    );
    const emf = logged.filter((line) => line._aws);
    const metricNames = (line: Record<string, any>) => line._aws.CloudWatchMetrics[0].Metrics.map((m: { Name: string }) => m.Name);
    // The figure with a dimension of its own went out at once; the invocation's own figures when it ended.
    expect(emf.find((line) => metricNames(line).includes('CreateFailuresByOutcome'))).toMatchObject({ outcome: 'timeout', CreateFailuresByOutcome: 1 });
    expect(emf.find((line) => metricNames(line).includes('CreateAttempts'))).toMatchObject({ CreateAttempts: 2 });
  });

  it('print nothing for an invocation that records no metric and logs nothing, cold start or not', async () => {
    const handler = withTracingLogsAndMetrics(async () => ({ statusCode: 204 }));
    for (const invocation of [1, 2]) {
      const output = captureOutput();
      expect(await handler({}, context)).toEqual({ statusCode: 204 });
      // The cold start metric is the one line an invocation may print without recording anything: a metric, no warning.
      const printed = output().filter((line) => !(line.startsWith('{') && 'ColdStart' in JSON.parse(line)));
      expect(printed, `invocation ${invocation}`).toEqual([]);
      vi.restoreAllMocks();
    }
  });

  it('clear what an invocation that recorded no metric added to its dimensions, so the next one does not carry it', async () => {
    const lines = captureStdout();
    await withTracingLogsAndMetrics(async () => void sharedMetrics.addDimension('machineType', 'gb200'))({}, context);
    await withTracingLogsAndMetrics(async () => void powertoolsMetrics(sharedMetrics).count('CreateAttempts', 1))({}, context);
    const emf = lines().find((line) => line._aws?.CloudWatchMetrics[0].Metrics.some((m: { Name: string }) => m.Name === 'CreateAttempts'));
    expect(emf).toMatchObject({ CreateAttempts: 1 });
    expect(emf!.machineType).toBeUndefined();
  });

  it('reset the correlation id between invocations', async () => {
    const lines = captureStdout();
    const handler = withTracingLogsAndMetrics(async () => void sharedLogger.info('no request'));
    await handler({}, context);
    expect(lines().find((line) => line.message === 'no request')?.correlation_id).toBeUndefined();
  });
});
