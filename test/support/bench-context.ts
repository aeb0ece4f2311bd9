import { inject } from 'vitest';
import { PartResults, type BenchContext } from '../../bench/part.ts';

/** A bench part's context on the tier's DynamoDB Local, quiet, with its own id; `results` as the parts before left them. */
export function benchContext(results = new PartResults()): BenchContext {
  return { id: `t${Date.now()}`, progress: () => {}, dynamo: { endpoint: inject('dynamoEndpoint'), javaPid: undefined }, results };
}
