import type { Server } from 'node:http';

/** A 5xx the local site answered: the method and path asked, the status, and the Retry-After it gave, if any. */
export interface ServerErrorAnswer {
  method: string;
  path: string;
  status: number;
  retryAfter?: string;
}

/**
 * Every 5xx the server answers, kept for the tests' invariants: under AWS's semantics the only acceptable one is 503
 * `throttled` with Retry-After (the one 503 the API gives), after the request's own retries ran out.
 */
export function watchServerErrors(server: Server): () => ServerErrorAnswer[] {
  const answers: ServerErrorAnswer[] = [];
  server.prependListener('request', (req, res) => {
    res.once('finish', () => {
      // Only the API's answers (API Gateway names each with its request id): /health's 503 is the runner's own report.
      if (res.statusCode < 500 || !res.hasHeader('apigw-requestid')) return;
      const retryAfter = res.getHeader('retry-after');
      answers.push({
        method: req.method ?? 'GET',
        path: req.url ?? '/',
        status: res.statusCode,
        ...(retryAfter !== undefined ? { retryAfter: String(retryAfter) } : {}),
      });
    });
  });
  return () => [...answers];
}

/** The answers no client of Fleetward should ever get: any 5xx but a 503 that says when to try again. */
export const unacceptable = (answers: readonly ServerErrorAnswer[]) => answers.filter((a) => !(a.status === 503 && a.retryAfter !== undefined));
