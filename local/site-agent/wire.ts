import type { ServerResponse } from 'node:http';

/** A JSON answer (or none, for 204 and an absent body); nothing once the response is sent or gone. */
export function sendJson(res: ServerResponse, status: number, body?: unknown, contentType = 'application/json'): void {
  if (res.headersSent || res.destroyed) return;
  if (body === undefined || status === 204) {
    res.writeHead(status).end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(text) }).end(text);
}

/** A failed call's message, with the socket's error code (ECONNREFUSED...) when there is one. */
export function errorText(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown } } | undefined)?.cause;
  const message = error instanceof Error ? error.message : String(error);
  return typeof cause?.code === 'string' ? `${message} (${cause.code})` : message;
}
