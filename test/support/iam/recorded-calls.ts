import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RecordedCall } from '#local/aws-call-recorder.ts';

/** Where a test run records its sites' AWS calls when FLEETWARD_AWS_CALL_LOG names no directory. */
export const DEFAULT_AWS_CALL_LOG = '.test-output/aws-calls';

/** Thrown when there is nothing to check: the recordings come from the e2e suite, which must run first. */
export class NoRecordedCallsError extends Error {
  override name = 'NoRecordedCallsError';
}

/**
 * Every distinct call recorded in `dir` (local/aws-call-recorder.ts), from all the processes that wrote there, each
 * tier of the test run in a folder of its own.
 */
export function readRecordedCalls(dir: string): RecordedCall[] {
  const files = existsSync(dir) ? readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.jsonl')) : [];
  const lines = new Set(
    files.flatMap((name) =>
      readFileSync(join(dir, name), 'utf8')
        .split('\n')
        .filter((line) => line.trim() !== ''),
    ),
  );
  if (lines.size === 0) {
    throw new NoRecordedCallsError(
      `no AWS calls are recorded in ${dir}: run the e2e suite first (npm test does, in order; ` +
        `or FLEETWARD_AWS_CALL_LOG=${dir} npx vitest run test/e2e), then the IAM check`,
    );
  }
  return [...lines].map((line) => JSON.parse(line) as RecordedCall);
}
