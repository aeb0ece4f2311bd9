import { describe, expect, it } from 'vitest';
import { renderMachine, type Machine } from '#cli/views.ts';

// `fleetward machine show`: what an operator reads about a machine the site agent reports.

const longMessage = `Xid 79 on GPU 3: fell off the bus.\nDriver log:\n${'x'.repeat(300)}`;
const machine = (overrides: Machine['healthOverrides']): Machine => ({
  id: 'gb200-r1-02',
  machineType: 'gb200',
  rack: 'rack-1',
  state: 'Ready',
  labels: {},
  healthOverrides: overrides,
  allocatable: false,
  notAllocatableReasons: ['health-override:hardware-health'],
  lifecycle: 'quarantined',
  version: 3,
});
const hardwareHealth = {
  source: 'hardware-health',
  mode: 'merge' as const,
  alerts: [
    { id: 'GpuXid79', target: 'gb200-r1-02', message: longMessage, classifications: ['PreventAllocations' as const, 'SuppressExternalAlerting' as const] },
    { id: 'NvlinkDown', target: 'gb200-r1-02', message: '', classifications: ['PreventAllocations' as const] },
  ],
  createdBy: 'site-agent',
  createdAt: new Date().toISOString(),
};

describe('machine show', () => {
  it("lists the agent's health alerts in full, one line each, and keeps the overrides table to short lines", () => {
    const text = renderMachine(machine([hardwareHealth]));
    const [, alerts] = text.split('Health alerts (site agent):\n');
    expect(alerts!.split('\n')).toEqual([
      `  GpuXid79 [PreventAllocations, SuppressExternalAlerting]: ${longMessage.replace(/\s+/g, ' ')}`,
      '  NvlinkDown [PreventAllocations]',
    ]);
    const table = text.split('Health overrides:\n')[1]!.split('\n\n')[0]!.split('\n');
    expect(table).toHaveLength(2);
    expect(table[1]).toMatch(/^ {2}hardware-health\s+merge\s+GpuXid79,NvlinkDown\s+/);
    expect(table[1]!.length).toBeLessThan(200);
    expect(table[1]).toContain('Xid 79 on GPU 3: fell off the bus. Driver log:');
  });

  it('has no alerts section for a machine the agent reports nothing about', () => {
    expect(renderMachine(machine([]))).not.toContain('Health alerts');
  });
});
