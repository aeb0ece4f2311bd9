// The agent's calls to the controller (docs/api.md "Site agent"): heartbeats, and the reports of work it was asked
// for. A report is retried until the controller takes it or refuses it (4xx); the journal keeps it owed meanwhile,
// so a restart sends it again.

import type { CleanupReport, HeartbeatBody, ValidationReportBody } from '#site/agent-contract.ts';
import type { TokenSource } from './token.ts';

export const CONTROLLER_CALL_TIMEOUT_MS = 10_000;

export type ReportKind = 'cleanup' | 'validation' | 'maintenance';

export interface ControllerClient {
  heartbeat(body: HeartbeatBody): Promise<number>;
  /** True when the controller took it or refused it for good (4xx: asking again will not change its mind). */
  report(
    kind: ReportKind,
    machineId: string,
    body: CleanupReport | ValidationReportBody | { maintenanceId: string; ok: boolean; message?: string },
  ): Promise<boolean>;
}

export function controllerClient(
  baseUrl: string,
  token: TokenSource,
  retryDelaysMs: readonly number[],
  log: (line: string) => void,
  signal: AbortSignal,
): ControllerClient {
  const base = baseUrl.replace(/\/+$/, '');

  async function post(path: string, body: unknown): Promise<number> {
    const response = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${await token()}` },
      body: JSON.stringify(body),
      signal: AbortSignal.any([signal, AbortSignal.timeout(CONTROLLER_CALL_TIMEOUT_MS)]),
    });
    await response.body?.cancel();
    return response.status;
  }

  const sleep = (ms: number) =>
    new Promise<boolean>((resolve) => {
      if (signal.aborted) return resolve(false);
      const timer = setTimeout(() => resolve(true), ms);
      signal.addEventListener(
        'abort',
        () => {
          clearTimeout(timer);
          resolve(false);
        },
        { once: true },
      );
    });

  return {
    heartbeat: (body) => post('/site/v1/heartbeats', body),
    async report(kind, machineId, body) {
      const path = `/site/v1/machines/${encodeURIComponent(machineId)}/${kind}`;
      for (let attempt = 0; !signal.aborted; attempt++) {
        try {
          const status = await post(path, body);
          if (status < 300) return true;
          if (status < 500) {
            log(`the controller refused the ${kind} report for ${machineId}: ${status}`);
            return true;
          }
          log(`${kind} report for ${machineId} answered ${status}`);
        } catch (error) {
          if (signal.aborted) return false;
          log(`${kind} report for ${machineId} failed: ${(error as Error).message}`);
        }
        // Past the configured delays it keeps trying at the last one: a report is owed until it is taken.
        if (!(await sleep(retryDelaysMs[Math.min(attempt, retryDelaysMs.length - 1)] ?? 60_000))) return false;
      }
      return false;
    },
  };
}
