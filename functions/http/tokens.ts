import { randomBytes } from 'node:crypto';
import { jwtVerify, SignJWT, type JWTPayload } from 'jose';
import type { Role } from '#domain/model.ts';

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

/**
 * Stands in for the IdP + API Gateway JWT authorizer when running locally: HS256 is enough because the issuer
 * and the verifier are the same process.
 */
export function createLocalTokenIssuer(options: LocalTokenIssuerOptions): LocalTokenIssuer {
  const { issuer, audience } = options;
  const key =
    typeof options.secret === 'string'
      ? new TextEncoder().encode(options.secret)
      : (options.secret ?? new Uint8Array(randomBytes(32)));

  return {
    issuer,
    audience,
    async mint({ sub, org, roles }, ttl = defaultTtl) {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ org, roles })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(sub)
        .setIssuer(issuer)
        .setAudience(audience)
        .setIssuedAt(now)
        // jose reads a number as an absolute time, so relative seconds are turned into one here.
        .setExpirationTime(typeof ttl === 'number' ? now + ttl : ttl)
        .sign(key);
    },
    async verify(token) {
      const { payload } = await jwtVerify(token, key, { issuer, audience, algorithms: ['HS256'] });
      return payload;
    },
  };
}
