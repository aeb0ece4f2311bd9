// The agent's memory across restarts: every call it accepts is appended here, and flushed to disk (fsync), BEFORE it
// answers 2xx; every step of the work that follows is appended as it ends. A restart replays the file to learn what it
// had promised and what is left (operations/resume.ts). Append-only JSON lines: a crash can at worst cut the last
// line short, which replay drops, since nothing was answered for it.

import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import type { JournalEntry } from './entries.ts';

export interface Journal {
  /** Appends and flushes one entry; returns once it is on disk. */
  append(entry: JournalEntry): void;
  /** What the file held when the journal opened, in order. */
  readonly replayed: readonly JournalEntry[];
  /** Rewrites the file with only `keep` (what still matters), atomically. */
  compact(keep: readonly JournalEntry[]): void;
  close(): void;
}

export function openJournal(path: string): Journal {
  mkdirSync(dirname(path), { recursive: true });
  const replayed = existsSync(path) ? readEntries(path) : [];
  let fd = openSync(path, 'a');
  return {
    replayed,
    append(entry) {
      writeSync(fd, `${JSON.stringify(entry)}\n`);
      fsyncSync(fd);
    },
    compact(keep) {
      const next = `${path}.compact`;
      const out = openSync(next, 'w');
      for (const entry of keep) writeSync(out, `${JSON.stringify(entry)}\n`);
      fsyncSync(out);
      closeSync(out);
      renameSync(next, path);
      // The rename is durable only once the folder's entry is.
      const dir = openSync(dirname(path), 'r');
      fsyncSync(dir);
      closeSync(dir);
      closeSync(fd);
      fd = openSync(path, 'a');
    },
    close() {
      closeSync(fd);
    },
  };
}

function readEntries(path: string): JournalEntry[] {
  const lines = readFileSync(path, 'utf8').split('\n');
  const entries: JournalEntry[] = [];
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    try {
      entries.push(JSON.parse(line) as JournalEntry);
    } catch (error) {
      // Only the last line can be torn by a crash; a bad line elsewhere means the file was damaged: stop, don't guess.
      if (i < lines.length - 2) throw new Error(`journal ${path}: line ${i + 1} is not JSON (${(error as Error).message})`);
    }
  });
  return entries;
}
