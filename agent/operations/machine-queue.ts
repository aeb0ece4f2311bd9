// One machine does one thing at a time: a cleanup waits for the provisioning it follows, a power cycle for the
// validation under way. Machines do not wait for one another.

export interface MachineQueue {
  run<T>(machineId: string, work: () => Promise<T>): Promise<T>;
  /** Resolves when every queued work has ended (a clean stop). */
  idle(): Promise<void>;
}

export function machineQueue(): MachineQueue {
  const tails = new Map<string, Promise<unknown>>();
  return {
    run(machineId, work) {
      const previous = tails.get(machineId) ?? Promise.resolve();
      const next = previous.then(work, work);
      const tail = next.catch(() => {});
      tails.set(machineId, tail);
      void tail.then(() => {
        if (tails.get(machineId) === tail) tails.delete(machineId);
      });
      return next;
    },
    async idle() {
      while (tails.size > 0) await Promise.all(tails.values());
    },
  };
}
