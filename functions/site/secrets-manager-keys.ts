import { GetSecretValueCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { keysReadOnDemand, parseSigningKeys, type SigningKeySource } from '#site/signing-keys.ts';

/**
 * The signing keys kept in the Secrets Manager secret `secretArn` (`[site_agent] signing_secret_arn`), read with
 * GetSecretValue, the only permission the stack grants on it. The client is made on the first read, not at a cold
 * start: a container that never calls the agent never pays for it.
 */
export function secretsManagerKeys(secretArn: string, client: () => SecretsManagerClient): SigningKeySource {
  let secrets: SecretsManagerClient | undefined;
  return keysReadOnDemand(async () => {
    secrets ??= client();
    const answer = await secrets.send(new GetSecretValueCommand({ SecretId: secretArn }));
    if (answer.SecretString === undefined) throw new Error(`signing secret ${secretArn}: no SecretString (a binary secret is not read)`);
    return parseSigningKeys(answer.SecretString, `signing secret ${secretArn}`);
  });
}
