import type { TestSite } from './local-site.ts';

export interface Answer {
  status: number;
  code?: string;
  retryAfter: string | null;
}

/**
 * A tenant's client as docs/api.md asks it to behave: an answer whose status is in `retryOn` (503 `throttled`, or a
 * lost race's 409) is sent again, with the same Idempotency-Key, after its Retry-After (1 s without one). Every answer
 * it got is kept in `answers`, for a test to judge them all.
 */
export function retryingClient(site: TestSite, token: string, retryOn: readonly number[]) {
  const answers: Answer[] = [];
  async function call(method: string, path: string, body?: unknown) {
    for (;;) {
      const response = await site.call(method, path, {
        token,
        ...(body ? { body } : {}),
        headers: { 'idempotency-key': `${method} ${path} ${JSON.stringify(body ?? null)}` },
      });
      answers.push({ status: response.status, code: response.body?.code, retryAfter: response.headers.get('retry-after') });
      if (!retryOn.includes(response.status)) return response;
      await new Promise((resolve) => setTimeout(resolve, Number(response.headers.get('retry-after') ?? 1) * 1000));
    }
  }
  return { call, answers };
}
