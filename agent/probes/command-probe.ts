// A site's own probe: a command that prints `{ "alerts": [{ id, message, classifications }] }`, checked against the
// agent contract's alert shape, so what it says goes into the heartbeat as it said it.

import { z } from 'zod';
import { alertClassifications, type AgentAlertBody } from '#site/agent-contract.ts';

const commandOutput = z.strictObject({
  alerts: z
    .array(z.strictObject({ id: z.string().min(1).max(128), message: z.string().max(4096), classifications: z.array(z.enum(alertClassifications)).max(3) }))
    .max(64),
});

export function commandProbeAlerts(stdout: string): AgentAlertBody[] {
  let json: unknown;
  try {
    json = JSON.parse(stdout);
  } catch {
    throw new Error(`printed no JSON: ${stdout.trim().slice(0, 200)}`);
  }
  const parsed = commandOutput.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`printed ${issue.path.join('.') || 'JSON'}: ${issue.message}, not { alerts: [{ id, message, classifications }] }`);
  }
  return parsed.data.alerts;
}
