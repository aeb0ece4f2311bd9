import { describe, expect, it } from 'vitest';
import { createLocalHttpServer } from '#local/api-gateway-adapter.ts';

describe('the function timeout', () => {
  it("is what the handler is told, and a handler still running at it gets API Gateway's 500 for a failed function", async () => {
    const timeoutMs = 300;
    const remaining: number[] = [];
    const slow = await createLocalHttpServer({
      port: 0,
      routes: [{ method: 'GET', path: '/slow', public: true, group: 'tenant' }],
      handler: async (_event, context) => {
        remaining.push(context.getRemainingTimeInMillis());
        return new Promise(() => {});
      },
      verifyToken: async () => ({}),
      timeoutMs,
    });
    try {
      const started = Date.now();
      const response = await fetch(`${slow.url}/slow`);
      expect(response.status).toBe(500);
      expect(await response.json()).toEqual({ message: 'Internal Server Error' });
      expect(Date.now() - started).toBeGreaterThanOrEqual(timeoutMs);
      expect(remaining[0]).toBeGreaterThan(timeoutMs - 100);
      expect(remaining[0]).toBeLessThanOrEqual(timeoutMs);
    } finally {
      await slow.close();
    }
  });
});
