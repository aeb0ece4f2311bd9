import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { parseListClaim, parseRoles, principalFromClaims, principalFromEvent } from '#http/auth.ts';
import { ProblemError } from '#http/problem.ts';
import { createLocalTokenIssuer } from '#http/tokens.ts';
import { flattenClaims } from '#local/api-gateway-adapter.ts';

describe('list claims', () => {
  it.each([
    ['API Gateway form', '[tenant provider-admin]', ['tenant', 'provider-admin']],
    ['API Gateway form, one item', '[tenant]', ['tenant']],
    ['API Gateway form, empty', '[]', []],
    ['real array', ['tenant', 'site-agent'], ['tenant', 'site-agent']],
    ['JSON array string', '["tenant","provider-admin"]', ['tenant', 'provider-admin']],
    ['JSON array string, spaced', '[ "tenant", "site-agent" ]', ['tenant', 'site-agent']],
    ['bare string', 'tenant', ['tenant']],
    ['space separated', 'tenant site-agent', ['tenant', 'site-agent']],
    ['missing', undefined, []],
  ])('%s', (_name, value, expected) => {
    expect(parseListClaim(value)).toEqual(expected);
  });

  it('keeps known roles only, once each', () => {
    expect(parseRoles('[tenant admin tenant site-agent]')).toEqual(['tenant', 'site-agent']);
  });

  it('reads back what the local adapter flattens, as API Gateway does', () => {
    const flat = flattenClaims({ sub: 'a', org: 'o', roles: ['tenant', 'provider-admin'], exp: 1700000000 });
    expect(flat).toEqual({ sub: 'a', org: 'o', roles: '[tenant provider-admin]', exp: '1700000000' });
    expect(principalFromClaims(flat)).toEqual({ sub: 'a', org: 'o', roles: ['tenant', 'provider-admin'] });
  });
});

describe('principal', () => {
  const problemCode = (fn: () => unknown) => {
    try {
      fn();
    } catch (error) {
      return error instanceof ProblemError ? `${error.status} ${error.code}` : 'other';
    }
    return 'none';
  };

  it('401 unauthenticated when claims or one of sub, org, roles is missing', () => {
    expect(problemCode(() => principalFromClaims(undefined))).toBe('401 unauthenticated');
    expect(problemCode(() => principalFromClaims({ org: 'o', roles: '[tenant]' }))).toBe('401 unauthenticated');
    expect(problemCode(() => principalFromClaims({ sub: 's', roles: '[tenant]' }))).toBe('401 unauthenticated');
    expect(problemCode(() => principalFromClaims({ sub: 's', org: 'o' }))).toBe('401 unauthenticated');
  });

  it('reads the JWT authorizer claims of a v2 event, and none when there is no authorizer', () => {
    const event = {
      requestContext: { authorizer: { jwt: { claims: { sub: 's', org: 'o', roles: '[site-agent]' }, scopes: null } } },
    } as unknown as APIGatewayProxyEventV2;
    expect(principalFromEvent(event)).toEqual({ sub: 's', org: 'o', roles: ['site-agent'] });
    expect(problemCode(() => principalFromEvent({ requestContext: {} } as APIGatewayProxyEventV2))).toBe('401 unauthenticated');
  });
});

describe('local token issuer', () => {
  const issuer = createLocalTokenIssuer({ issuer: 'i', audience: 'a', secret: 'fixed-secret-for-tests' });

  it('mints tokens it verifies', async () => {
    const claims = await issuer.verify(await issuer.mint({ sub: 's', org: 'o', roles: ['tenant'] }));
    expect(claims).toMatchObject({ sub: 's', org: 'o', roles: ['tenant'], iss: 'i', aud: 'a' });
  });

  it('rejects expired tokens, other secrets and other audiences', async () => {
    await expect(issuer.verify(await issuer.mint({ sub: 's', org: 'o', roles: [] }, -1))).rejects.toThrow();
    const other = createLocalTokenIssuer({ issuer: 'i', audience: 'a' });
    await expect(issuer.verify(await other.mint({ sub: 's', org: 'o', roles: [] }))).rejects.toThrow();
    const elsewhere = createLocalTokenIssuer({ issuer: 'i', audience: 'b', secret: 'fixed-secret-for-tests' });
    await expect(issuer.verify(await elsewhere.mint({ sub: 's', org: 'o', roles: [] }))).rejects.toThrow();
  });

  it('remembers a verified token only until it expires, and never one it refused', async () => {
    let clock = Date.parse('2026-11-26T06:00:00Z');
    const timed = createLocalTokenIssuer({ issuer: 'i', audience: 'a', secret: 'fixed-secret-for-tests', now: () => clock });
    const token = await timed.mint({ sub: 's', org: 'o', roles: ['tenant'] }, 60);
    expect(await timed.verify(token)).toMatchObject({ sub: 's' });
    clock += 59_000;
    expect(await timed.verify(token)).toMatchObject({ sub: 's' });
    clock += 1_000;
    await expect(timed.verify(token)).rejects.toThrow(/exp/);
    // A forged signature is refused every time, even after the genuine token was verified.
    const [header, payload] = token.split('.');
    const forged = `${header}.${payload}.${'A'.repeat(43)}`;
    clock -= 30_000;
    expect(await timed.verify(token)).toMatchObject({ sub: 's' });
    await expect(timed.verify(forged)).rejects.toThrow();
    await expect(timed.verify(forged)).rejects.toThrow();
  });
});
