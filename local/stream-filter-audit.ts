import type { DynamoDBRecord } from 'aws-lambda';
import { entityOfRecord, eventOfRecord } from '#handlers/stream.ts';
import { streamFilterPatterns } from '#lib/stream-filters.ts';
import { parseFilterPattern, passesAnyFilter } from '#lib/lambda-event-filter.ts';

/** A record on which the mapping's filters and the stream handler disagree. */
export interface FilterDisagreement {
  /** `dropped`: the handler acts on it but the filters keep it away (lost in AWS); `passed`: invoked for nothing. */
  kind: 'dropped' | 'passed';
  eventName: string | undefined;
  pk: string | undefined;
  sk: string | undefined;
}

/**
 * The stack's stream filters, applied to each record as Lambda applies them, and checked against what the stream
 * handler does with the same record: every record the local site produces is a test of the filters.
 */
export function auditedStreamFilter() {
  // Through JSON, as the template carries them, so a pattern Lambda would refuse fails here first.
  const patterns = streamFilterPatterns().map((pattern) => parseFilterPattern(JSON.stringify(pattern)));
  const disagreements: FilterDisagreement[] = [];
  const filter = (record: DynamoDBRecord): boolean => {
    const passes = passesAnyFilter(patterns, record);
    const wanted = eventOfRecord(record) !== null || entityOfRecord(record) !== null;
    if (passes !== wanted) {
      const keys = record.dynamodb?.Keys;
      disagreements.push({ kind: wanted ? 'dropped' : 'passed', eventName: record.eventName, pk: keys?.pk?.S, sk: keys?.sk?.S });
    }
    return passes;
  };
  return { filter, disagreements: () => [...disagreements] };
}
