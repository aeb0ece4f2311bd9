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

describe('a stall of the runner process', () => {
  it("lets a handler's answer that fell due before the function's timeout win, as it does in AWS", async () => {
    const timeoutMs = 1_000;
    // Each handler answers 200 `margin` ms before its deadline, as the API's early answer does; margins differ, as
    // the ms left when a handler arms its timer do.
    const server = await createLocalHttpServer({
      port: 0,
      routes: [{ method: 'GET', path: '/early', public: true, group: 'tenant' }],
      handler: async (event, context) => {
        const margin = Number(event.queryStringParameters?.margin);
        await new Promise((resolve) => setTimeout(resolve, context.getRemainingTimeInMillis() - margin));
        return { statusCode: 200, body: 'answered early' };
      },
      verifyToken: async () => ({}),
      timeoutMs,
    });
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    try {
      const first = fetch(`${server.url}/early?margin=250`);
      await sleep(300);
      const second = fetch(`${server.url}/early?margin=260`);
      // Busy until both requests' answers and both timeouts are due: Node then runs every due timeout of one duration
      // together, the first request's and the second's, before the second handler's earlier answer.
      await sleep(400);
      const stalledUntil = Date.now() + 700;
      while (Date.now() < stalledUntil);
      expect((await first).status).toBe(200);
      expect((await second).status).toBe(200);
    } finally {
      await server.close();
    }
  });
});
