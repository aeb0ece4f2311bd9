// The few HTTP calls a Redfish driver makes, over node:https so that a BMC's own CA (or, in a lab, none) can be
// trusted per machine. Answers are JSON; an error carries the BMC's own message (Redfish's `error.message` or
// `@Message.ExtendedInfo`).

import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

export interface RedfishAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

export interface RedfishHttpOptions {
  baseUrl: string;
  timeoutMs: number;
  caFile?: string | undefined;
  tlsVerify: boolean;
}

export type RedfishSend = (method: string, path: string, headers: Record<string, string>, body?: unknown) => Promise<RedfishAnswer>;

export function redfishHttp(options: RedfishHttpOptions): RedfishSend {
  const ca = options.caFile ? readFileSync(options.caFile) : undefined;
  return (method, path, headers, body) =>
    new Promise((resolve, reject) => {
      const url = new URL(path, options.baseUrl);
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
      const req = send(
        url,
        {
          method,
          headers: {
            accept: 'application/json',
            'odata-version': '4.0',
            ...(payload !== undefined ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) } : {}),
            ...headers,
          },
          ...(url.protocol === 'https:' ? { rejectUnauthorized: options.tlsVerify, ...(ca ? { ca } : {}) } : {}),
          timeout: options.timeoutMs,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: unknown = text;
            try {
              parsed = text === '' ? undefined : JSON.parse(text);
            } catch {
              // Not JSON (an HTML error page): kept as text for the message.
            }
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed });
          });
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`no answer within ${Math.round(options.timeoutMs / 1000)} s`)));
      req.on('error', reject);
      req.end(payload);
    });
}

/** What the BMC said about a failed call, in its own words where it gave some. */
export function redfishErrorText(answer: RedfishAnswer): string {
  const body = answer.body as { error?: { message?: string; '@Message.ExtendedInfo'?: Array<{ Message?: string }> } } | string | undefined;
  if (typeof body === 'string') return `${answer.status} ${body.slice(0, 300)}`.trim();
  const extended = body?.error?.['@Message.ExtendedInfo']?.map((info) => info.Message).filter(Boolean) ?? [];
  // A BMC often says the same thing in both places: once is enough.
  const words = [...new Set([body?.error?.message, ...extended].filter(Boolean))].join('; ');
  return words ? `${answer.status} ${words}` : `${answer.status}`;
}
