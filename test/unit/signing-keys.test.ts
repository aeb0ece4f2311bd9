import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SigningKeySet } from '#site/request-signing.ts';
import { secretsManagerKeys } from '#site/secrets-manager-keys.ts';
import { keysReadOnDemand, parseSigningKeys } from '#site/signing-keys.ts';
import { startSecretsManagerStandIn, type SecretsManagerStandIn } from '#test/support/secrets-manager-stand-in.ts';

const key = (id: string) => ({ id, secret: `${id}-secret-of-at-least-32-characters` });
const setOf = (current: string, ...ids: string[]): SigningKeySet => ({ keys: ids.map(key), current });

describe('the signing secret', () => {
  it('reads { keys: [{ id, secret }], current }', () => {
    const text = JSON.stringify(setOf('k2', 'k1', 'k2'));
    expect(parseSigningKeys(text, 'secret')).toEqual(setOf('k2', 'k1', 'k2'));
  });

  it.each([
    ['not JSON', '{"keys":', /^secret: not JSON$/],
    ['no keys', JSON.stringify({ keys: [], current: 'k1' }), /keys: Too small/],
    ['a current key it does not hold', JSON.stringify(setOf('k3', 'k1', 'k2')), /current: "current" names none of the keys/],
    ['two keys of one id', JSON.stringify({ keys: [key('k1'), key('k1')], current: 'k1' }), /keys: two keys have the same id/],
    ['a short secret', JSON.stringify({ keys: [{ id: 'k1', secret: 'short' }], current: 'k1' }), /keys\.0\.secret: a secret is at least 32 characters/],
    ['a key id that does not fit a header', JSON.stringify({ keys: [{ id: 'k 1', secret: key('k').secret }], current: 'k 1' }), /keys\.0\.id: a key id is/],
    ['an unknown field', JSON.stringify({ ...setOf('k1', 'k1'), previous: 'k0' }), /\(top level\)/],
  ])('is refused when it has %s, naming what without showing a secret', (_case, text, message) => {
    const read = () => parseSigningKeys(text, 'secret');
    expect(read).toThrow(message);
    expect(read).not.toThrow(/secret-of-at-least/);
  });
});

describe('keys read on demand', () => {
  function source(...sets: SigningKeySet[]) {
    let reads = 0;
    const keys = keysReadOnDemand(async () => {
      const next = sets[Math.min(reads, sets.length - 1)]!;
      reads++;
      return next;
    });
    return { keys, reads: () => reads };
  }

  it('reads nothing until a call needs the keys, then keeps them', async () => {
    const { keys, reads } = source(setOf('k1', 'k1'));
    expect(reads()).toBe(0);
    const first = await keys.current();
    expect(await keys.current()).toBe(first);
    expect(reads()).toBe(1);
  });

  it('reads again once after a refusal, and keeps the new keys', async () => {
    const { keys, reads } = source(setOf('k1', 'k1'), setOf('k2', 'k1', 'k2'));
    const refused = await keys.current();
    expect((await keys.reload(refused)).current).toBe('k2');
    expect((await keys.current()).current).toBe('k2');
    expect(reads()).toBe(2);
  });

  it('shares one read between calls refused at the same time, and gives a late one the newer keys without a read', async () => {
    const { keys, reads } = source(setOf('k1', 'k1'), setOf('k2', 'k2'));
    const refused = await keys.current();
    const [a, b] = await Promise.all([keys.reload(refused), keys.reload(refused)]);
    expect(a).toBe(b);
    expect(await keys.reload(refused)).toBe(a);
    expect(reads()).toBe(2);
  });

  it('keeps no failed read: the next call reads again', async () => {
    let fail = true;
    const keys = keysReadOnDemand(async () => {
      if (fail) throw new Error('Secrets Manager unavailable');
      return setOf('k1', 'k1');
    });
    await expect(keys.current()).rejects.toThrow('Secrets Manager unavailable');
    fail = false;
    expect((await keys.current()).current).toBe('k1');
  });
});

describe('keys from Secrets Manager', () => {
  const arn = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:fleetward/agent-signing-AbCdEf';
  let secrets: SecretsManagerStandIn;

  beforeAll(async () => {
    secrets = await startSecretsManagerStandIn(JSON.stringify(setOf('k1', 'k1')));
  });

  afterAll(() => secrets.close());

  const client = () => new SecretsManagerClient({ endpoint: secrets.url, region: 'eu-west-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } });

  it('are one GetSecretValue of the configured ARN, made at the first call, and another after a refusal', async () => {
    let made = 0;
    const keys = secretsManagerKeys(arn, () => (made++, client()));
    expect(made).toBe(0);
    const first = await keys.current();
    expect(first).toEqual(setOf('k1', 'k1'));
    secrets.secretString = JSON.stringify(setOf('k2', 'k1', 'k2'));
    expect((await keys.reload(first)).current).toBe('k2');
    expect(secrets.asked).toEqual([
      { target: 'secretsmanager.GetSecretValue', body: { SecretId: arn } },
      { target: 'secretsmanager.GetSecretValue', body: { SecretId: arn } },
    ]);
    expect(made).toBe(1);
  });

  it('name the secret when it is not the expected document', async () => {
    secrets.secretString = '{"keys":[]}';
    await expect(secretsManagerKeys(arn, client).current()).rejects.toThrow(`signing secret ${arn}: not { "keys"`);
    secrets.secretString = undefined;
    await expect(secretsManagerKeys(arn, client).current()).rejects.toThrow('no SecretString');
  });
});
