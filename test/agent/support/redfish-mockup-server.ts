// A small Redfish service for tests: it serves a mockup folder in DMTF's mockup layout (every resource at
// `<path>/index.json`, as DMTF's Redfish-Mockup-Server reads them) and plays the parts a static mockup cannot: a
// session log-in (SessionService Sessions, X-Auth-Token), basic auth, and ComputerSystem.Reset, which checks the
// reset type against the system's `ResetType@Redfish.AllowableValues` and changes its PowerState.

import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

export interface RedfishMockup {
  url: string;
  /** Every reset the service took, in order. */
  resets: Array<{ system: string; resetType: string }>;
  powerStateOf(system: string): string;
  stop(): Promise<void>;
}

type Resource = Record<string, unknown>;

export async function startRedfishMockup(options: { dir: string; user: string; password: string }): Promise<RedfishMockup> {
  const overrides = new Map<string, Resource>();
  const sessions = new Set<string>();
  const resets: RedfishMockup['resets'] = [];

  const load = (path: string): Resource | undefined => {
    const clean = path.replace(/\/+$/, '');
    if (overrides.has(clean)) return overrides.get(clean);
    try {
      return JSON.parse(readFileSync(join(options.dir, clean, 'index.json'), 'utf8')) as Resource;
    } catch {
      return undefined;
    }
  };
  const send = (res: ServerResponse, status: number, body?: unknown, headers: Record<string, string> = {}) => {
    const text = body === undefined ? '' : JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(text);
  };
  const error = (res: ServerResponse, status: number, message: string) =>
    send(res, status, { error: { code: 'Base.1.0.GeneralError', message, '@Message.ExtendedInfo': [{ Message: message }] } });
  const authorised = (req: IncomingMessage) => {
    const token = req.headers['x-auth-token'];
    if (typeof token === 'string' && sessions.has(token)) return true;
    const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    return basic !== undefined && Buffer.from(basic, 'base64').toString() === `${options.user}:${options.password}`;
  };
  const body = (req: IncomingMessage) =>
    new Promise<Resource>((resolve) => {
      let text = '';
      req.on('data', (chunk: Buffer) => (text += chunk.toString()));
      req.on('end', () => resolve(text ? (JSON.parse(text) as Resource) : {}));
    });

  const server = createServer((req, res) => {
    void (async () => {
      const path = new URL(req.url ?? '/', 'http://bmc').pathname.replace(/\/+$/, '');
      if (req.method === 'GET' && (path === '/redfish/v1' || path === '/redfish')) return send(res, 200, load(path));
      if (req.method === 'POST' && path === '/redfish/v1/SessionService/Sessions') {
        const login = await body(req);
        if (login.UserName !== options.user || login.Password !== options.password) return error(res, 401, 'Invalid username or password');
        const token = `token-${sessions.size + 1}-${Math.random().toString(36).slice(2)}`;
        sessions.add(token);
        return send(res, 201, { Id: String(sessions.size), UserName: login.UserName }, { 'x-auth-token': token, location: `${path}/${sessions.size}` });
      }
      if (!authorised(req)) return error(res, 401, 'The request requires authentication');
      if (req.method === 'GET') {
        const resource = load(path);
        return resource ? send(res, 200, resource) : error(res, 404, `no resource at ${path}`);
      }
      const reset = /^(.*)\/Actions\/ComputerSystem\.Reset$/.exec(path)?.[1];
      if (req.method === 'POST' && reset) {
        const system = load(reset);
        const action = (system?.Actions as Resource | undefined)?.['#ComputerSystem.Reset'] as Resource | undefined;
        if (!system || !action) return error(res, 404, `no system at ${reset}`);
        const { ResetType } = await body(req);
        const allowed = action['ResetType@Redfish.AllowableValues'] as string[];
        if (typeof ResetType !== 'string' || !allowed.includes(ResetType)) return error(res, 400, `The value ${ResetType} for ResetType is not allowed`);
        resets.push({ system: reset, resetType: ResetType });
        const PowerState = /Off|Shutdown/.test(ResetType) ? 'Off' : 'On';
        overrides.set(reset, { ...system, PowerState });
        return send(res, 204);
      }
      return error(res, 405, `${req.method} ${path} is not allowed`);
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    resets,
    powerStateOf: (system) => String(load(system)?.PowerState),
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
