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
 * handler does with the same record: every record the local site produces is a test of the filters. The patterns are
 * JSON, as the template carries them (`FilterCriteria.Filters[].Pattern`); by default the ones the stack is given.
 */
export function auditedStreamFilter(templatePatterns: readonly string[] = streamFilterPatterns().map((pattern) => JSON.stringify(pattern))) {
  // Parsed as Lambda parses them, so a pattern Lambda would refuse fails here first.
  const patterns = templatePatterns.map((pattern) => parseFilterPattern(pattern));
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
