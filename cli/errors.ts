// What can end a command: a problem document from the API, or a mistake the CLI itself can name.

export interface ProblemDocument {
  type?: string;
  title?: string;
  status: number;
  detail?: string;
  code?: string;
  errors?: Array<{ path: string; message: string }>;
}

/** The API answered with a 4xx/5xx; `problem` is its RFC 9457 body (or as close as we could read). */
export class ApiError extends Error {
  override name = 'ApiError';
  readonly problem: ProblemDocument;
  constructor(problem: ProblemDocument) {
    super(problem.detail ?? problem.title ?? `HTTP ${problem.status}`);
    this.problem = problem;
  }
}

/** Usage or local trouble (no URL, unreadable config, unreachable API, a wait that timed out). */
export class CliError extends Error {
  override name = 'CliError';
  readonly exitCode: number;
  constructor(message: string, exitCode = 1) {
    super(message);
    this.exitCode = exitCode;
  }
}

/** Exit codes: 1 the API refused or a wait ended badly, 2 usage. */
export const exitCodes = { failed: 1, usage: 2 } as const;
