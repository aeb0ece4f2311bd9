import type { TestSite } from './local-site.ts';

export interface Answer {
  status: number;
  code?: string;
  retryAfter: string | null;
}

type Response = Awaited<ReturnType<TestSite['call']>>;

/** What docs/api.md tells a client to send again: 503 `throttled`, and the 409 of a lost race (`concurrent-update`). */
export const retryable = (response: Response): boolean => response.status === 503 || (response.status === 409 && response.body?.code === 'concurrent-update');

/**
 * A tenant's client as docs/api.md asks it to behave: an answer `shouldRetry` picks (by default the retryable ones) is
 * sent again, with the same Idempotency-Key, after its Retry-After (1 s without one). Every answer it got is kept in
 * `answers`, for a test to judge them all.
 */
export function retryingClient(site: TestSite, token: string, shouldRetry: (response: Response) => boolean = retryable) {
  const answers: Answer[] = [];
  async function call(method: string, path: string, body?: unknown) {
    for (;;) {
      const response = await site.call(method, path, {
        token,
        ...(body ? { body } : {}),
        headers: { 'idempotency-key': `${method} ${path} ${JSON.stringify(body ?? null)}` },
      });
      answers.push({ status: response.status, code: response.body?.code, retryAfter: response.headers.get('retry-after') });
      if (!shouldRetry(response)) return response;
      await new Promise((resolve) => setTimeout(resolve, Number(response.headers.get('retry-after') ?? 1) * 1000));
    }
  }
  return { call, answers };
}
