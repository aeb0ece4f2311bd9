// What `dcgmi health -c -j` says (DCGM's health watches, JSON output), as findings. dcgmi prints a tree of
// `{ "value"?, "children"? }` nodes under `body`: the overall health, then per GPU each watched subsystem with its
// health and, under it, the incidents' messages. A subsystem at "Failure" keeps the machine out; "Warning" is told.

import { CRITICAL_XIDS, type Finding } from './findings.ts';

interface Node {
  value?: unknown;
  children?: Record<string, Node>;
}

const isNode = (value: unknown): value is Node => typeof value === 'object' && value !== null;

/** Every string value below a node: the incidents' own words. */
function messagesUnder(node: Node): string[] {
  return Object.values(node.children ?? {}).flatMap((child) => [
    ...(typeof child.value === 'string' && !/^(Pass|Healthy|Warning|Failure)$/i.test(child.value) ? [child.value] : []),
    ...messagesUnder(child),
  ]);
}

export function dcgmHealthFindings(text: string): Finding[] {
  const document = JSON.parse(text) as { body?: Record<string, Node> };
  const findings: Finding[] = [];
  const walk = (key: string, node: Node, gpu: string | undefined) => {
    const gpuHere = /^(?:GPU(?: ID)?:?\s*)?(\d+)$/i.exec(key)?.[1] ?? gpu;
    const health = typeof node.value === 'string' ? node.value : undefined;
    if (gpuHere !== undefined && gpuHere !== key && (health === 'Failure' || health === 'Warning')) {
      const words = messagesUnder(node);
      const message = `GPU ${gpuHere} ${key}: ${health}${words.length ? `: ${words.join('; ')}` : ''}`;
      for (const xid of words.flatMap((w) => [...w.matchAll(/XID\s*(?:error\s*)?(\d+)/gi)].map((m) => Number(m[1])))) {
        findings.push({ kind: CRITICAL_XIDS.has(xid) ? 'xid-critical' : 'xid', subject: `gpu${gpuHere}-xid${xid}`, message });
      }
      findings.push({ kind: health === 'Failure' ? 'dcgm-failure' : 'dcgm-warning', subject: `gpu${gpuHere}-${key}`, message });
      return;
    }
    for (const [childKey, child] of Object.entries(node.children ?? {})) if (isNode(child)) walk(childKey, child, gpuHere);
  };
  for (const [key, node] of Object.entries(document.body ?? {})) if (isNode(node)) walk(key, node, undefined);
  const overall = findOverall(document.body);
  if (findings.length === 0 && (overall === 'Failure' || overall === 'Warning')) {
    findings.push({ kind: overall === 'Failure' ? 'dcgm-failure' : 'dcgm-warning', subject: 'overall', message: `DCGM overall health: ${overall}` });
  }
  return findings;
}

function findOverall(body: Record<string, Node> | undefined): unknown {
  for (const [key, node] of Object.entries(body ?? {})) {
    if (/overall health/i.test(key)) return node.value;
    const inner = findOverall(node.children);
    if (inner !== undefined) return inner;
  }
  return undefined;
}
