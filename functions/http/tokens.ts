import { randomBytes } from 'node:crypto';
import { jwtVerify, SignJWT, type JWTPayload } from 'jose';
import type { Role } from '#domain/core/model.ts';

export interface TokenSubject {
  sub: string;
  org: string;
  roles: Role[];
}

export interface LocalTokenIssuerOptions {
  issuer: string;
  audience: string;
  /** Fixed secret (e.g. to keep tokens valid across restarts); a random one per process otherwise. */
  secret?: string | Uint8Array;
  /** The verifier's clock, in ms (tests move it to expire tokens). */
  now?: () => number;
}

export interface LocalTokenIssuer {
  readonly issuer: string;
  readonly audience: string;
  /** `ttl`: seconds (negative mints an already expired token, for tests) or a jose time span like `"2h"`. */
  mint(subject: TokenSubject, ttl?: number | string): Promise<string>;
  /** The verified claims; rejects on a bad signature, issuer, audience or an expired token. */
  verify(token: string): Promise<JWTPayload>;
}

const defaultTtl = '1h';
/** Verified tokens remembered: a busy local site sends the same few tokens thousands of times. */
const VERIFIED_KEPT = 1_000;

/**
 * Stands in for the IdP + API Gateway JWT authorizer when running locally: HS256 is enough because the issuer
 * and the verifier are the same process. The authorizer's work is API Gateway's in AWS, not the functions', so the
 * local one remembers the tokens it verified rather than spend the site's one event loop on them again.
 */
export function createLocalTokenIssuer(options: LocalTokenIssuerOptions): LocalTokenIssuer {
  const { issuer, audience } = options;
  const key = typeof options.secret === 'string' ? new TextEncoder().encode(options.secret) : (options.secret ?? new Uint8Array(randomBytes(32)));

  const now = options.now ?? Date.now;
  // Token → its verified claims. A signature checks the same every time, so only expiry is judged again; a token that
  // failed is not remembered and is checked in full each time.
  const verified = new Map<string, JWTPayload>();
  const expired = (claims: JWTPayload) => claims.exp !== undefined && claims.exp * 1000 <= now();

  return {
    issuer,
    audience,
    async mint({ sub, org, roles }, ttl = defaultTtl) {
      const issuedAt = Math.floor(now() / 1000);
      return (
        new SignJWT({ org, roles })
          .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
          .setSubject(sub)
          .setIssuer(issuer)
          .setAudience(audience)
          .setIssuedAt(issuedAt)
          // jose reads a number as an absolute time, so relative seconds are turned into one here.
          .setExpirationTime(typeof ttl === 'number' ? issuedAt + ttl : ttl)
          .sign(key)
      );
    },
    async verify(token) {
      const known = verified.get(token);
      if (known && !expired(known)) return known;
      verified.delete(token);
      const { payload } = await jwtVerify(token, key, { issuer, audience, algorithms: ['HS256'], currentDate: new Date(now()) });
      if (verified.size >= VERIFIED_KEPT) verified.delete(verified.keys().next().value!);
      verified.set(token, Object.freeze(payload));
      return payload;
    },
  };
}
