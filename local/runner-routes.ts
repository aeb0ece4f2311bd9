import type { ServerResponse } from 'node:http';
import { z } from 'zod';
import { ProblemError, problemResponse } from '#http/problem.ts';
import type { LocalTokenIssuer } from '#http/tokens.ts';
import { PROMETHEUS_CONTENT_TYPE, type PrometheusMetrics } from '#runtime/prometheus-metrics.ts';
import type { ExtraRoute } from './api-gateway-adapter.ts';
import { dashboardRoutes } from './dashboard.ts';
import type { Health } from './health.ts';
import { readJsonBody, RequestBodyError } from './request-body.ts';
import type { RunnerCounters } from './runner-counters.ts';
import type { SiteSimulator } from './site-agent/simulator.ts';

/**
 * What the local runner serves beside the API, on the API's port (docs/api.md "Local runner extras"): dev tokens,
 * /health with the runner's counters, /metrics, the simulated agent's /_sim controls and the dashboard.
 */
export interface RunnerRoutesOptions {
  issuer: LocalTokenIssuer;
  health: () => Promise<Health>;
  counters: () => RunnerCounters;
  metrics: PrometheusMetrics;
  simulator: SiteSimulator;
}

const tokenRequest = z.strictObject({
  sub: z.string().min(1).max(128),
  org: z.string().min(1).max(64),
  roles: z.array(z.enum(['tenant', 'provider-admin', 'site-agent'])).min(1),
});

export function runnerRoutes({ issuer, health, counters, metrics, simulator }: RunnerRoutesOptions): ExtraRoute[] {
  return [
    {
      method: 'POST',
      path: '/_local/token',
      handle: async (req, res) => {
        try {
          const parsed = tokenRequest.safeParse(await readJsonBody(req));
          if (!parsed.success) {
            const errors = parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
            throw new ProblemError(422, 'validation-failed', 'a token needs sub, org and roles', errors);
          }
          send(res, 200, { token: await issuer.mint(parsed.data) });
        } catch (error) {
          sendError(res, error);
        }
      },
    },
    {
      method: 'GET',
      path: '/health',
      handle: async (_req, res) => {
        const result = await health();
        send(res, result.ok ? 200 : 503, {
          status: result.ok ? 'ok' : 'degraded',
          checks: result.checks,
          down: result.down,
          metrics: metrics.siteGauges(),
          counters: counters(),
        });
      },
    },
    {
      method: 'GET',
      path: '/metrics',
      handle: async (_req, res) => {
        res.writeHead(200, { 'content-type': PROMETHEUS_CONTENT_TYPE });
        res.end(metrics.render());
      },
    },
    {
      method: '*',
      path: '/_sim/*',
      handle: async (req, res) => {
        try {
          if (!(await simulator.handleControl(req, res))) sendError(res, new ProblemError(404, 'route-not-found', `no simulator route ${req.url}`));
        } catch (error) {
          sendError(res, error);
        }
      },
    },
    ...dashboardRoutes(),
  ];
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function sendError(res: ServerResponse, error: unknown): void {
  const problem =
    error instanceof ProblemError
      ? error
      : error instanceof RequestBodyError
        ? new ProblemError(error.status, error.code, error.message)
        : new ProblemError(500, 'internal-error', 'the local runner failed');
  const response = problemResponse(problem);
  res.writeHead(response.statusCode, response.headers);
  res.end(response.body);
}
