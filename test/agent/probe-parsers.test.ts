import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { commandProbeAlerts } from '#agent/probes/command-probe.ts';
import { dcgmHealthFindings } from '#agent/probes/dcgm.ts';
import { alertOf, FINDING_CLASSIFICATIONS } from '#agent/probes/findings.ts';
import { parseSdrElist, parseSelElist } from '#agent/probes/ipmi-sel.ts';
import { nvidiaSmiFindings } from '#agent/probes/nvidia-smi.ts';

const fixture = (name: string) => readFileSync(join(import.meta.dirname, 'fixtures', name), 'utf8');
const kinds = (findings: Array<{ kind: string; subject: string }>) => findings.map((f) => `${f.kind} ${f.subject}`).sort();

describe('nvidia-smi -q -x', () => {
  it('finds nothing on healthy GPUs: correctable and lifetime (aggregate) errors do not count', () => {
    expect(nvidiaSmiFindings({ code: 0, stdout: fixture('nvidia-smi-healthy.xml'), stderr: '' }, 2)).toEqual([]);
  });

  it('reports uncorrectable ECC, pages waiting to retire, retired pages and rows that failed or wait to remap', () => {
    const findings = nvidiaSmiFindings({ code: 0, stdout: fixture('nvidia-smi-faulty.xml'), stderr: '' }, 2);
    expect(kinds(findings)).toEqual([
      'ecc-uncorrectable 00000000:07:00.0',
      'retired-pages 00000000:07:00.0',
      'retired-pages-pending 00000000:07:00.0',
      'row-remap-failure 00000000:0F:00.0',
      'row-remap-pending 00000000:07:00.0',
    ]);
    expect(findings.find((f) => f.kind === 'ecc-uncorrectable')?.message).toContain('2 uncorrectable ECC errors');
  });

  it('reports fewer GPUs than the type has', () => {
    const findings = nvidiaSmiFindings({ code: 0, stdout: fixture('nvidia-smi-healthy.xml'), stderr: '' }, 8);
    expect(kinds(findings)).toEqual(['gpu-missing count']);
    expect(findings[0]!.message).toBe("nvidia-smi sees 2 GPUs; the machine's type has 8");
  });

  it('reports a GPU fallen off the bus, by its bus id, from what nvidia-smi printed', () => {
    const findings = nvidiaSmiFindings({ code: 15, stdout: '', stderr: fixture('nvidia-smi-gpu-lost.stderr') }, 8);
    expect(kinds(findings)).toEqual(['gpu-lost 0000:3B:00.0']);
  });

  it('reports a driver it cannot talk to', () => {
    const said =
      "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.";
    expect(kinds(nvidiaSmiFindings({ code: 9, stdout: said, stderr: '' }))).toEqual(['gpu-driver-unreachable driver']);
  });
});

describe('dcgmi health -c -j', () => {
  it('reports each failing or warning subsystem per GPU, and a critical XID on its own', () => {
    const findings = dcgmHealthFindings(fixture('dcgm-health-failure.json'));
    expect(kinds(findings)).toEqual([
      'dcgm-failure gpu0-Memory system',
      'dcgm-failure gpu3-Driver system',
      'dcgm-warning gpu0-PCIe system',
      'xid-critical gpu3-xid79',
    ]);
    expect(findings.find((f) => f.kind === 'xid-critical')?.message).toBe(
      'GPU 3 Driver system: Failure: Detected XID 79 for GPU 3: GPU has fallen off the bus.',
    );
  });

  it('finds nothing when DCGM says healthy', () => {
    expect(dcgmHealthFindings(fixture('dcgm-health-healthy.json'))).toEqual([]);
  });
});

describe('ipmitool sel elist / sdr elist', () => {
  it('keeps asserted critical and warning events, drops those deasserted since and the harmless ones', () => {
    expect(kinds(parseSelElist(fixture('ipmitool-sel-elist.txt')))).toEqual([
      'sel-critical Memory #0x01 Uncorrectable ECC',
      'sel-critical Processor #0x41 IERR',
      'sel-warning Temperature Inlet Temp Upper Non-critical going high',
    ]);
  });

  it('reads sensors past their thresholds', () => {
    const findings = parseSdrElist(fixture('ipmitool-sdr-elist.txt'));
    expect(kinds(findings)).toEqual(['sensor-critical GPU3 Temp', 'sensor-warning Fan 2A']);
    expect(findings[0]!.message).toBe('sensor GPU3 Temp is cr (97 degrees C)');
  });
});

describe('alerts', () => {
  it('carry PreventAllocations exactly where the one table says', () => {
    const alert = alertOf('dcgm', { kind: 'dcgm-failure', subject: 'gpu0-Memory system', message: 'm' });
    expect(alert).toEqual({ id: 'dcgm:dcgm-failure:gpu0-Memory system', message: 'm', classifications: ['PreventAllocations'] });
    expect(alertOf('sel', { kind: 'sel-warning', subject: 's', message: 'm' }).classifications).toEqual([]);
    const preventing = Object.entries(FINDING_CLASSIFICATIONS).filter(([, c]) => c.includes('PreventAllocations'));
    // docs/agent.md shows the same table: a row added here without it fails test/agent/agent-docs.test.ts.
    expect(preventing.length).toBeGreaterThan(5);
  });

  it('a command probe prints its own alerts; anything else is its failure', () => {
    const alerts = [{ id: 'nic-down', message: 'eth1 has no carrier', classifications: ['PreventAllocations'] }];
    expect(commandProbeAlerts(JSON.stringify({ alerts }))).toEqual(alerts);
    expect(() => commandProbeAlerts('all good')).toThrow('printed no JSON: all good');
    expect(() => commandProbeAlerts('{"alerts":[{"id":"x","message":"m","classifications":["Bogus"]}]}')).toThrow(/alerts\.0\.classifications\.0/);
  });
});
