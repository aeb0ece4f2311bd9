import type { IncomingMessage } from 'node:http';

/** The one way the local runner's servers read a request body: capped, and a clear 400/413 when it is bad. */

export const defaultMaxBodyBytes = 1024 * 1024;

export class RequestBodyError extends Error {
  override name = 'RequestBodyError';
  readonly status: 400 | 413;
  /** Problem code, as the API's problem+json answers carry it. */
  readonly code: 'invalid-json' | 'payload-too-large';
  constructor(status: 400 | 413, code: 'invalid-json' | 'payload-too-large', message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const tooLarge = (limit: number) => new RequestBodyError(413, 'payload-too-large', `The request body exceeds ${limit} bytes`);

/** The body as text; rejects with a 413 RequestBodyError past `limit` bytes, before buffering them. */
export async function readBody(req: IncomingMessage, limit = defaultMaxBodyBytes): Promise<string> {
  return (await readBodyBytes(req, limit)).toString('utf8');
}

/** The body's bytes as they came (what a signature covers); the same cap as `readBody`. */
export function readBodyBytes(req: IncomingMessage, limit = defaultMaxBodyBytes): Promise<Buffer> {
  if (Number(req.headers['content-length'] ?? 0) > limit) {
    // Drained so the client still reads our 413 instead of a reset.
    req.resume();
    return Promise.reject(tooLarge(limit));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.off('data', onData);
        req.resume();
        reject(tooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** The body parsed as JSON, or undefined when there is none; a 400 RequestBodyError when it is not JSON. */
export async function readJsonBody(req: IncomingMessage, limit = defaultMaxBodyBytes): Promise<unknown> {
  return parseJsonBody(await readBody(req, limit));
}

/** Text already read, parsed as `readJsonBody` does. */
export function parseJsonBody(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new RequestBodyError(400, 'invalid-json', 'The request body is not valid JSON');
  }
}
