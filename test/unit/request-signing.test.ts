import { describe, expect, it } from 'vitest';
import {
  canonicalRequest,
  MAX_CLOCK_SKEW_SECONDS,
  signingHeaders,
  signRequest,
  verifyRequest,
  type RequestToSign,
  type SigningKey,
  type SigningKeySet,
} from '#site/request-signing.ts';

const secret = '0123456789abcdef0123456789abcdef';
const k1: SigningKey = { id: 'k1', secret };
const k2: SigningKey = { id: 'k2', secret: 'fedcba9876543210fedcba9876543210' };
const signedBy = (current: string): SigningKeySet => ({ keys: [k1, k2], current });
const at = new Date(1_700_000_000_000);
const create: RequestToSign = { method: 'POST', target: '/instances?dry=1', body: '{"name":"job"}' };

const verify = (accepted: SigningKey[], request: RequestToSign, headers: Record<string, string | string[] | undefined>, now = at) =>
  verifyRequest(accepted, { ...request, headers }, now);

describe('request signing: what is signed', () => {
  // Fixed vectors, worked out with openssl: an agent written in any language must come to the same signatures.
  it('signs METHOD, the target with its query, unix seconds and the body digest, each on its own line', () => {
    expect(canonicalRequest(create, '1700000000')).toBe('POST\n/instances?dry=1\n1700000000\n31eb29e6caadad78411ddd0528286411299565d77edd0b1b0ea6e7821b52fb2e');
    expect(signRequest(signedBy('k1'), create, at)).toEqual({
      [signingHeaders.keyId]: 'k1',
      [signingHeaders.timestamp]: '1700000000',
      [signingHeaders.signature]: 'v1=d18774ab4223a30417bf8a057215ade2420dad852af1d5e2246e95fca11908ab',
    });
  });

  it('signs an empty body as the digest of nothing, and the target as sent (percent-encoded, not decoded)', () => {
    const request = { method: 'delete', target: '/instances/job%20r2', body: '' };
    expect(signRequest(signedBy('k1'), request, new Date(1_700_000_000_999))[signingHeaders.signature]).toBe(
      'v1=9e5214faedc623ec9ebf4995388ca6e2a2e124d8dbd27b1d8c6ac9ea65ab49f2',
    );
  });

  it("signs with the set's current key", () => {
    const headers = signRequest(signedBy('k2'), create, at);
    expect(headers[signingHeaders.keyId]).toBe('k2');
    expect(verify([k2], create, headers)).toEqual({ ok: true, keyId: 'k2' });
    expect(verify([k1], create, headers)).toMatchObject({ ok: false });
  });

  it('refuses to sign with a current key the set does not hold', () => {
    expect(() => signRequest({ keys: [k1], current: 'k9' }, create, at)).toThrow(/current key "k9"/);
  });
});

describe('request signing: what an agent accepts', () => {
  const headers = signRequest(signedBy('k1'), create, at);
  const signature = headers[signingHeaders.signature]!;

  it('a request signed by any key it holds (two during a rotation), with bytes or text alike', () => {
    expect(verify([k1, k2], create, headers)).toEqual({ ok: true, keyId: 'k1' });
    expect(verify([k2, k1], { ...create, body: Buffer.from(create.body) }, headers)).toEqual({ ok: true, keyId: 'k1' });
    expect(verify([k1], create, signRequest(signedBy('k1'), create, at))).toEqual({ ok: true, keyId: 'k1' });
  });

  it(`a timestamp up to ${MAX_CLOCK_SKEW_SECONDS} s away either way, and no further`, () => {
    const skewed = (seconds: number) => verify([k1], create, headers, new Date(at.getTime() + seconds * 1000));
    expect(skewed(MAX_CLOCK_SKEW_SECONDS)).toMatchObject({ ok: true });
    expect(skewed(-MAX_CLOCK_SKEW_SECONDS)).toMatchObject({ ok: true });
    expect(skewed(MAX_CLOCK_SKEW_SECONDS + 1)).toEqual({ ok: false, reason: "the timestamp is 301 s away from the agent's clock" });
    expect(skewed(-MAX_CLOCK_SKEW_SECONDS - 1)).toEqual({ ok: false, reason: "the timestamp is 301 s away from the agent's clock" });
  });

  it.each([
    ['no signature headers at all', {}, 'not signed'],
    ['no key id', { ...headers, [signingHeaders.keyId]: undefined }, 'not signed'],
    ['no timestamp', { ...headers, [signingHeaders.timestamp]: undefined }, 'not signed'],
    ['no signature', { ...headers, [signingHeaders.signature]: undefined }, 'not signed'],
    ['a header sent twice', { ...headers, [signingHeaders.signature]: [signature, 'v1=00'] }, 'not signed'],
    ['an unknown key id', { ...headers, [signingHeaders.keyId]: 'k3' }, 'unknown key id "k3"'],
    ['a timestamp that is not unix seconds', { ...headers, [signingHeaders.timestamp]: '2023-11-14T22:13:20Z' }, 'the timestamp is not unix seconds'],
    ['a signature of another scheme', { ...headers, [signingHeaders.signature]: signature.replace('v1=', 'v2=') }, 'the signature is not v1=<64 hex digits>'],
    ['a signature cut short', { ...headers, [signingHeaders.signature]: signature.slice(0, -2) }, 'the signature is not v1=<64 hex digits>'],
    ['a timestamp changed after signing', { ...headers, [signingHeaders.timestamp]: '1700000001' }, 'wrong signature'],
    ['the signature of another key', { ...headers, [signingHeaders.keyId]: 'k2' }, 'wrong signature'],
  ])('refuses %s', (_case, sent, reason) => {
    expect(verify([k1, k2], create, sent)).toEqual({ ok: false, reason });
  });

  it.each([
    ['another method', { ...create, method: 'PUT' }],
    ['another path', { ...create, target: '/instances/other?dry=1' }],
    ['another query', { ...create, target: '/instances?dry=0' }],
    ['no query', { ...create, target: '/instances' }],
    ['another body', { ...create, body: '{"name":"jab"}' }],
    ['the same JSON spaced differently', { ...create, body: '{ "name": "job" }' }],
  ])('refuses a signature made for %s', (_case, received) => {
    expect(verify([k1], received, headers)).toEqual({ ok: false, reason: 'wrong signature' });
  });
});
