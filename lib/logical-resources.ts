/**
 * Names for the AWS resources the functions call, independent of any deployment: `table/main`,
 * `table/main/index/<name>`, `table/main/stream`, `table/idempotency`, `event-bus/repair`, or `*` for actions that
 * take no resource. The grants (function-permissions.ts) are written in them, the stack turns them into its ARNs, the
 * local runner records its calls in them (local/aws-call-recorder.ts), and the IAM test resolves both to one set of
 * ARNs to compare.
 */
export type LogicalTable = 'main' | 'idempotency';

export const logicalResource = {
  table: (table: LogicalTable) => `table/${table}`,
  index: (indexName: string) => `table/main/index/${indexName}`,
  stream: 'table/main/stream',
  eventBus: 'event-bus/repair',
  /** For actions without resource-level permissions (their only resource is `*`). */
  any: '*',
} as const;

/** What a logical resource names, parsed; `undefined` for a string outside the vocabulary. */
export type ParsedResource =
  | { kind: 'table'; table: LogicalTable }
  | { kind: 'index'; indexName: string }
  | { kind: 'stream' }
  | { kind: 'event-bus' }
  | { kind: 'any' };

export function parseLogicalResource(resource: string): ParsedResource | undefined {
  if (resource === logicalResource.any) return { kind: 'any' };
  if (resource === logicalResource.stream) return { kind: 'stream' };
  if (resource === logicalResource.eventBus) return { kind: 'event-bus' };
  if (resource === logicalResource.table('main')) return { kind: 'table', table: 'main' };
  if (resource === logicalResource.table('idempotency')) return { kind: 'table', table: 'idempotency' };
  const index = /^table\/main\/index\/([A-Za-z0-9_.-]{3,255})$/.exec(resource)?.[1];
  return index ? { kind: 'index', indexName: index } : undefined;
}
