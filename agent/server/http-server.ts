// The agent's HTTP side: the routes of the agent contract (docs/api.md "Site agent"), each answering only a call the
// controller signed (docs/api.md "Signing"): anything else, on any path, is 401 `{ "error": "unauthorized" }` before
// it is read further. The reason goes to the agent's log, never to the caller.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInstanceRequest, powerRequest, startMaintenanceRequest, validationRequest } from '#site/agent-contract.ts';
import { verifyRequest, type SigningKey } from '#site/request-signing.ts';
import { refusal, type Answer } from '../operations/answer.ts';
import type { Instances } from '../operations/instances.ts';
import type { MachineWork } from '../operations/machine-work.ts';
import type { Power } from '../operations/power.ts';

/** Far above any call of the contract (the largest is a create, well under 1 KB). */
const MAX_BODY_BYTES = 64 * 1024;

export interface AgentRoutes {
  instances: Instances;
  power: Power;
  work: MachineWork;
}

export interface AgentServer {
  readonly url: string;
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('end', () => resolve(size > MAX_BODY_BYTES ? undefined : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function send(res: ServerResponse, reply: Answer): void {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(reply.body);
  res.writeHead(reply.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}

/** Parses a body with the contract's schema; a 400 naming the problem otherwise. */
function parsed<T>(
  schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: { issues: Array<{ path: PropertyKey[]; message: string }> } } },
  body: Buffer,
): T | Answer {
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch {
    return refusal(400, 'bad_request', 'the body is not JSON');
  }
  const result = schema.safeParse(json);
  if (result.success) return result.data;
  return refusal(400, 'bad_request', result.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; '));
}

const isAnswer = (value: unknown): value is Answer => typeof value === 'object' && value !== null && 'status' in value && 'body' in value;

async function route(routes: AgentRoutes, method: string, path: string, body: Buffer): Promise<Answer> {
  const segment = (pattern: RegExp) => {
    const match = pattern.exec(path)?.[1];
    return match === undefined ? undefined : decodeURIComponent(match);
  };
  if (path === '/instances') {
    if (method !== 'POST') return refusal(405, 'method_not_allowed', `${method} ${path}`);
    const request = parsed(createInstanceRequest, body);
    return isAnswer(request) ? request : routes.instances.create(request);
  }
  const name = segment(/^\/instances\/([^/]+)$/);
  if (name !== undefined) {
    if (method === 'DELETE') return routes.instances.delete(name);
    if (method === 'GET') return routes.instances.status(name);
    return refusal(405, 'method_not_allowed', `${method} ${path}`);
  }
  const powered = segment(/^\/instances\/([^/]+)\/power$/);
  if (powered !== undefined && method === 'POST') {
    const request = parsed(powerRequest, body);
    return isAnswer(request) ? request : routes.power.request(powered, request);
  }
  const validated = segment(/^\/machines\/([^/]+)\/validation$/);
  if (validated !== undefined && method === 'POST') {
    const request = parsed(validationRequest, body);
    return isAnswer(request) ? request : routes.work.validate(validated, request);
  }
  const maintained = segment(/^\/machines\/([^/]+)\/maintenance$/);
  if (maintained !== undefined && method === 'POST') {
    const request = parsed(startMaintenanceRequest, body);
    return isAnswer(request) ? request : routes.work.maintain(maintained, request);
  }
  return refusal(404, 'not_found', path);
}

export async function startAgentServer(options: {
  host: string;
  port: number;
  keys: () => readonly SigningKey[];
  routes: AgentRoutes;
  log: (line: string) => void;
}): Promise<AgentServer> {
  const server: Server = createServer((req, res) => {
    void (async () => {
      const target = req.url ?? '/';
      const body = await readBody(req);
      const method = req.method ?? 'GET';
      const verdict = verifyRequest(options.keys(), { method, target, body: body ?? Buffer.alloc(0), headers: req.headers }, new Date());
      if (!verdict.ok) {
        options.log(`refused ${method} ${target}: ${verdict.reason}`);
        return send(res, { status: 401, body: { error: 'unauthorized' } });
      }
      if (body === undefined) return send(res, refusal(413, 'payload_too_large', `the body exceeds ${MAX_BODY_BYTES} bytes`));
      const requestId = req.headers['x-request-id'];
      options.log(`${method} ${target}${typeof requestId === 'string' ? ` for request ${requestId}` : ''}`);
      send(res, await route(options.routes, method, new URL(target, 'http://agent').pathname, body));
    })().catch((error: unknown) => {
      options.log(`${req.method} ${req.url} failed: ${(error as Error).stack ?? String(error)}`);
      send(res, refusal(500, 'internal', (error as Error).message));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { address, port } = server.address() as AddressInfo;
  return {
    url: `http://${address.includes(':') ? `[${address}]` : address}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
