// The controller's side of the agent's outbound calls, for agent tests that run without a site: it takes every
// heartbeat and report (checking the bearer token and the contract's body shapes) and keeps them for the test to read.
// The e2e test (test/e2e/reference-agent.test.ts) runs the agent against the real controller instead.

import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cleanupReport, heartbeatBody, validationReport } from '#site/agent-contract.ts';

export interface RecordedCall {
  path: string;
  body: any;
}

export interface RecordingController {
  url: string;
  calls: RecordedCall[];
  token: string;
  /** Answer the next calls to paths matching `pattern` with `status` (a controller that is down, or refuses). */
  answerWith(status: number, pattern?: RegExp): void;
  stop(): Promise<void>;
}

const read = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString()));
    req.on('end', () => resolve(text));
  });

export async function startRecordingController(token = 'site-agent-test-token'): Promise<RecordingController> {
  const calls: RecordedCall[] = [];
  let forced: { status: number; pattern: RegExp } | undefined;
  const server = createServer((req, res) => {
    void read(req).then((text) => {
      const path = req.url ?? '/';
      if (req.headers.authorization !== `Bearer ${token}`) return res.writeHead(401).end();
      if (forced?.pattern.test(path)) return res.writeHead(forced.status).end();
      const body = JSON.parse(text);
      const schema =
        path === '/site/v1/heartbeats'
          ? heartbeatBody
          : path.endsWith('/cleanup')
            ? cleanupReport
            : path.endsWith('/validation')
              ? validationReport
              : undefined;
      if (schema && !schema.safeParse(body).success) return res.writeHead(422).end();
      calls.push({ path, body });
      res.writeHead(path === '/site/v1/heartbeats' ? 204 : 200, { 'content-type': 'application/json' }).end(path === '/site/v1/heartbeats' ? undefined : '{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    token,
    answerWith(status, pattern = /.*/) {
      forced = status < 300 ? undefined : { status, pattern };
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
