import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SecretsManagerStandIn {
  /** Point a client here (`endpoint`, or AWS_ENDPOINT_URL_SECRETS_MANAGER for a bundle). */
  url: string;
  /** The SecretString every GetSecretValue answers with from now on; undefined answers a secret without one. */
  secretString: string | undefined;
  /** What each request asked: its X-Amz-Target and its body. */
  asked: Array<{ target: string | undefined; body: unknown }>;
  close(): Promise<void>;
}

/**
 * Secrets Manager's JSON protocol on 127.0.0.1, answering GetSecretValue with `secretString`: Secrets Manager itself
 * cannot run here, and a stand-in at its endpoint lets the real SDK client (and the bundled one) make its real request.
 */
export async function startSecretsManagerStandIn(secretString: string | undefined): Promise<SecretsManagerStandIn> {
  const server = createServer(async (req, res) => {
    let text = '';
    for await (const chunk of req) text += chunk;
    const body = JSON.parse(text) as { SecretId?: string };
    standIn.asked.push({ target: req.headers['x-amz-target'] as string | undefined, body });
    const answer = { ARN: body.SecretId, Name: 'fleetward/agent-signing', SecretString: standIn.secretString };
    res.writeHead(200, { 'content-type': 'application/x-amz-json-1.1' }).end(JSON.stringify(answer));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const standIn: SecretsManagerStandIn = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    secretString,
    asked: [],
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return standIn;
}
