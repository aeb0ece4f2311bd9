import type { DynamoDbLocal } from '#local/dynamodb-local.ts';

// What a bench part is to the run (bench/run.ts): a name to select it by, its options read from the environment, a
// run that measures, and a summary of what it measured. The run knows nothing else about any part.

/** The environment a part reads its BENCH_* variables from. */
export type Env = Readonly<Record<string, string | undefined>>;

/** What a part uses of the DynamoDB Local the run starts for it (a test hands it the endpoint of its own). */
export type PartDynamo = Pick<DynamoDbLocal, 'endpoint' | 'javaPid'>;

export interface BenchContext {
  /** Tells this run's tables apart from any other's on the same DynamoDB Local. */
  id: string;
  /** One line of progress, on stderr. */
  progress: (line: string) => void;
  /** The part's own DynamoDB Local, when it asks for one (`dynamodb`). */
  dynamo?: PartDynamo | undefined;
  /** What the parts before this one returned. */
  results: PartResults;
}

/** The DynamoDB Local a part asks the run for: a fresh one of its own, stopped once the part is done. */
export interface DynamoNeed {
  /** What it serves, for the progress line. */
  serves: string;
  /** The part starts sites one after another on it: the stream log is indexed so that none pays for those before. */
  sitesOneAfterAnother?: boolean;
}

export interface BenchPart<Options = unknown, Result = unknown> {
  /** As BENCH_ONLY and BENCH_SKIP name it. */
  name: string;
  /** What it measures, in a line. */
  describe: string;
  dynamodb?: DynamoNeed;
  /** Parts whose results it derives its own from, measuring nothing: it runs after them, and only when they all did. */
  reads?: readonly string[];
  /** Its options, from its own BENCH_* variables, each with its default. */
  options(env: Env): Options;
  run(context: BenchContext, options: Options): Promise<Result> | Result;
  /** Its entry in the report's `summary`, under `summaryKey`; `others` holds the other parts' results. */
  summaryKey: string;
  summarize(result: Result, others: PartResults): unknown;
  /** Where the whole result goes in the report; without it, the summary is all the report holds of the part. */
  section?: string;
  /** Why the run must fail although the part finished (its figures are written all the same); undefined if it need not. */
  failure?(result: Result): string | undefined;
}

/** A part of any options and result, as the run holds them. */
export type AnyPart = BenchPart<unknown, unknown>;

/** The results of the parts that ran, each read back with its own part's type. */
export class PartResults {
  private readonly byName = new Map<string, unknown>();

  set(part: AnyPart, result: unknown): void {
    this.byName.set(part.name, result);
  }

  get<Result>(part: BenchPart<unknown, Result>): Result | undefined {
    return this.byName.get(part.name) as Result | undefined;
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }
}

/** The part's DynamoDB Local, which it declared it needs. */
export function dynamoOf(context: BenchContext): PartDynamo {
  if (!context.dynamo) throw new Error('bench: this part runs without a DynamoDB Local; declare `dynamodb` to get one');
  return context.dynamo;
}

/** Infers a part's option and result types from its `options` and `run`. */
export const definePart = <Options, Result>(part: BenchPart<Options, Result>): BenchPart<Options, Result> => part;
