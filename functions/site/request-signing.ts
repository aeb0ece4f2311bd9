// How the controller proves to the site agent that a call is its own (docs/api.md "Signing"): an HMAC-SHA256 over the
// method, the request target, the time and the body's digest, under a key both sides hold. Pure, so the client, the
// simulated agent and the tests sign and check with the very same code.

import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

export const signingHeaders = {
  keyId: 'x-fleetward-key-id',
  timestamp: 'x-fleetward-timestamp',
  signature: 'x-fleetward-signature',
} as const;

/** The only scheme so far; the prefix lets an agent tell a later one apart. */
export const SIGNATURE_SCHEME = 'v1';

/** How far (seconds, either way) a request's timestamp may be from the agent's clock: bounds a captured request's replay. */
export const MAX_CLOCK_SKEW_SECONDS = 300;

export interface SigningKey {
  id: string;
  /** The HMAC key is this string's UTF-8 bytes, as written (not decoded from hex or base64). */
  secret: string;
}

/** What the controller holds: the keys of a rotation (at most a few), and the one it signs with. */
export interface SigningKeySet {
  keys: readonly SigningKey[];
  current: string;
}

/** A request as it goes on the wire: `target` is the path and query exactly as in the request line. */
export interface RequestToSign {
  method: string;
  target: string;
  body: string | Uint8Array;
}

const sha256Hex = (body: string | Uint8Array) => createHash('sha256').update(body).digest('hex');

/** METHOD "\n" TARGET "\n" TIMESTAMP "\n" hex SHA-256(body): what the signature covers, nothing normalised. */
export function canonicalRequest(request: RequestToSign, timestamp: string): string {
  return `${request.method.toUpperCase()}\n${request.target}\n${timestamp}\n${sha256Hex(request.body)}`;
}

export function signatureOf(secret: string, canonical: string): string {
  return createHmac('sha256', secret).update(canonical).digest('hex');
}

export function currentKey(keySet: SigningKeySet): SigningKey {
  const key = keySet.keys.find((candidate) => candidate.id === keySet.current);
  if (!key) throw new Error(`signing keys: the current key "${keySet.current}" is not among the keys`);
  return key;
}

/** The three headers that sign `request` with the set's current key at `now`. */
export function signRequest(keySet: SigningKeySet, request: RequestToSign, now: Date): Record<string, string> {
  const key = currentKey(keySet);
  const timestamp = String(Math.floor(now.getTime() / 1000));
  return {
    [signingHeaders.keyId]: key.id,
    [signingHeaders.timestamp]: timestamp,
    [signingHeaders.signature]: `${SIGNATURE_SCHEME}=${signatureOf(key.secret, canonicalRequest(request, timestamp))}`,
  };
}

export type Verdict = { ok: true; keyId: string } | { ok: false; reason: string };

/** Header values as node:http hands them over: a header sent twice is an array. */
export type ReceivedHeaders = Record<string, string | string[] | undefined>;

const SIGNATURE_PATTERN = new RegExp(`^${SIGNATURE_SCHEME}=([0-9a-fA-F]{64})$`);

/**
 * The agent's side: whether `request` carries a valid signature by one of the `accepted` keys (every key of a
 * rotation), made within MAX_CLOCK_SKEW_SECONDS of `now`. The reason is for the agent's logs, never for the caller.
 */
export function verifyRequest(accepted: readonly SigningKey[], request: RequestToSign & { headers: ReceivedHeaders }, now: Date): Verdict {
  const single = (name: string) => {
    const value = request.headers[name];
    return typeof value === 'string' ? value : undefined;
  };
  const keyId = single(signingHeaders.keyId);
  const timestamp = single(signingHeaders.timestamp);
  const signature = single(signingHeaders.signature);
  if (keyId === undefined || timestamp === undefined || signature === undefined) return { ok: false, reason: 'not signed' };
  const key = accepted.find((candidate) => candidate.id === keyId);
  if (!key) return { ok: false, reason: `unknown key id ${JSON.stringify(keyId)}` };
  if (!/^\d{1,12}$/.test(timestamp)) return { ok: false, reason: 'the timestamp is not unix seconds' };
  const skew = Math.abs(Math.floor(now.getTime() / 1000) - Number(timestamp));
  if (skew > MAX_CLOCK_SKEW_SECONDS) return { ok: false, reason: `the timestamp is ${skew} s away from the agent's clock` };
  const given = SIGNATURE_PATTERN.exec(signature)?.[1];
  if (!given) return { ok: false, reason: `the signature is not ${SIGNATURE_SCHEME}=<64 hex digits>` };
  const expected = Buffer.from(signatureOf(key.secret, canonicalRequest(request, timestamp)), 'hex');
  // Constant time, so the comparison tells nothing about how much of a forged signature was right.
  if (!timingSafeEqual(expected, Buffer.from(given, 'hex'))) return { ok: false, reason: 'wrong signature' };
  return { ok: true, keyId };
}
