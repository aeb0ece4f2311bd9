import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readJsonBody, RequestBodyError } from '#local/request-body.ts';

// A loopback server that answers what readJsonBody made of the request, with a 10-byte cap.
let server: Server;
let url: string;

beforeAll(async () => {
  server = createServer(async (req, res) => {
    try {
      const body = await readJsonBody(req, 10);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ body: body ?? null }));
    } catch (error) {
      if (!(error instanceof RequestBodyError)) throw error;
      res.writeHead(error.status, { 'content-type': 'application/json' }).end(JSON.stringify({ code: error.code, message: error.message }));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

async function post(body: string | ReadableStream<Uint8Array>) {
  const response = await fetch(url, { method: 'POST', body, duplex: 'half' } as RequestInit);
  return { status: response.status, body: await response.json() };
}

describe('reading a request body', () => {
  it('parses JSON within the cap', async () => {
    expect(await post('{"a":[1]}')).toEqual({ status: 200, body: { body: { a: [1] } } });
  });

  it('reads an empty body as none', async () => {
    expect(await post('')).toEqual({ status: 200, body: { body: null } });
  });

  it('answers 400 invalid-json to a body that is not JSON', async () => {
    expect(await post('{"a":')).toEqual({ status: 400, body: { code: 'invalid-json', message: 'The request body is not valid JSON' } });
  });

  it('answers 413 to a declared length over the cap', async () => {
    expect(await post('{"a":"12345678"}')).toEqual({
      status: 413,
      body: { code: 'payload-too-large', message: 'The request body exceeds 10 bytes' },
    });
  });

  it('answers 413 to a streamed body that grows past the cap, without a declared length', async () => {
    const chunks = ['{"a":', '"12345', '678"}'];
    const stream = new ReadableStream({
      pull(controller) {
        const next = chunks.shift();
        if (next === undefined) controller.close();
        else controller.enqueue(new TextEncoder().encode(next));
      },
    });
    expect((await post(stream)).status).toBe(413);
  });
});
