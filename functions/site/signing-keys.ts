// Where the agent client gets its signing keys: read once, when the first call needs them, and once more when the agent
// refuses a signature (the keys rotated since). In AWS they come from a Secrets Manager secret
// (secrets-manager-keys.ts); the local runner hands over a key set of its own making.

import * as z from 'zod/mini';
import '#config/zod-messages.ts';
import type { SigningKeySet } from '#site/request-signing.ts';

export interface SigningKeySource {
  /** The keys to sign with: read on first use, then kept. */
  current(): Promise<SigningKeySet>;
  /**
   * The keys read again because the agent refused a call signed with `refused`. Callers refused at the same time
   * share one read, and one whose keys were already replaced gets the newer ones without another read.
   */
  reload(refused: SigningKeySet): Promise<SigningKeySet>;
}

/** A key id goes in a header and in logs: short, and nothing that needs quoting. */
export const signingKeyId = z.string().check(z.regex(/^[A-Za-z0-9._-]{1,64}$/, 'a key id is 1 to 64 letters, digits, dots, dashes or underscores'));

/** 32 characters at least: `openssl rand -hex 32` gives 64. */
export const signingSecret = z.string().check(z.minLength(32, 'a secret is at least 32 characters'), z.maxLength(1024));

export const signingKey = z.strictObject({ id: signingKeyId, secret: signingSecret });

/** The Secrets Manager secret's JSON: `{ "keys": [{ "id", "secret" }], "current": "<id>" }`. */
const signingSecretDocument = z.strictObject({ keys: z.array(signingKey).check(z.minLength(1), z.maxLength(8)), current: signingKeyId }).check(
  z.refine((set) => set.keys.some((key) => key.id === set.current), { message: '"current" names none of the keys', path: ['current'] }),
  z.refine((set) => new Set(set.keys.map((key) => key.id)).size === set.keys.length, { message: 'two keys have the same id', path: ['keys'] }),
);

/** Parses the secret's text; the error names what is wrong but never a secret. */
export function parseSigningKeys(text: string, source: string): SigningKeySet {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error(`${source}: not JSON`);
  }
  const parsed = signingSecretDocument.safeParse(json);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.') || '(top level)'}: ${issue.message}`);
    throw new Error(`${source}: not { "keys": [{ "id", "secret" }], "current": "<id>" }: ${problems.join('; ')}`);
  }
  return parsed.data;
}

/** Keys that never change (the local runner's, a test's). */
export function staticKeys(keySet: SigningKeySet): SigningKeySource {
  return { current: async () => keySet, reload: async () => keySet };
}

/**
 * Keys read by `read` on the first call that needs them, then kept for the life of the process (a Lambda container),
 * and read again only after the agent refused them. A failed read is not kept: the next call reads again.
 */
export function keysReadOnDemand(read: () => Promise<SigningKeySet>): SigningKeySource {
  let kept: SigningKeySet | undefined;
  let reading: Promise<SigningKeySet> | undefined;
  const readOnce = () =>
    (reading ??= read()
      .then((keys) => (kept = keys))
      .finally(() => (reading = undefined)));
  return {
    current: async () => kept ?? readOnce(),
    reload: async (refused) => (kept !== undefined && kept !== refused ? kept : readOnce()),
  };
}
