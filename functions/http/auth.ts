import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type { Principal, Role } from '#domain/core/model.ts';
import { ProblemError } from '#http/problem.ts';

export type ClaimValue = string | number | boolean | string[] | undefined;
export type Claims = Record<string, ClaimValue>;

const knownRoles: readonly Role[] = ['tenant', 'provider-admin', 'site-agent'];

const unauthenticated = (detail: string) => new ProblemError(401, 'unauthenticated', detail);

/**
 * A list claim in any of the shapes it reaches us: a real array (local tools), a JSON array string, or the
 * `"[a b]"` string API Gateway's JWT authorizer makes of every array claim; a bare `"a b"` or `"a"` also counts.
 */
export function parseListClaim(value: ClaimValue): string[] {
  if (value === undefined || value === null) return [];
  if (Array.isArray(value)) return value.map(String);
  const text = String(value).trim();
  // Only a JSON array of strings is tried as JSON: a failed parse throws, and API Gateway's form comes on every call.
  if (/^\[\s*["\]]/.test(text)) {
    try {
      const parsed: unknown = JSON.parse(text);
      if (Array.isArray(parsed)) return parsed.map(String);
    } catch {
      // Not JSON: API Gateway's "[a b]" form, handled below.
    }
  }
  return text
    .replace(/^\[|\]$/g, '')
    .split(/[\s,]+/)
    .filter((item) => item !== '');
}

/** Unknown roles are dropped rather than rejected, so an IdP adding its own roles never locks callers out. */
export function parseRoles(value: ClaimValue): Role[] {
  const roles = parseListClaim(value).filter((role): role is Role => (knownRoles as string[]).includes(role));
  return [...new Set(roles)];
}

export function principalFromClaims(claims: Claims | undefined): Principal {
  if (!claims) throw unauthenticated('A bearer token is required');
  const sub = claims.sub;
  const org = claims.org;
  if (typeof sub !== 'string' || sub === '') throw unauthenticated('The token has no `sub` claim');
  if (typeof org !== 'string' || org === '') throw unauthenticated('The token has no `org` claim');
  if (claims.roles === undefined) throw unauthenticated('The token has no `roles` claim');
  return { sub, org, roles: parseRoles(claims.roles) };
}

/**
 * In AWS the JWT authorizer has already verified the token; locally the adapter did the same. Either way what
 * reaches the handler are the claims, or no authorizer at all when the request carried no token.
 */
export function principalFromEvent(event: APIGatewayProxyEventV2): Principal {
  const authorizer = (event.requestContext as { authorizer?: { jwt?: { claims?: Claims } } }).authorizer;
  return principalFromClaims(authorizer?.jwt?.claims);
}
