import { readFileSync } from 'node:fs';
import type { SecretRef } from './schema.ts';

/** Reads a secret where the config says it is; a missing one is an error naming the place, never the value. */
export function readSecret(ref: SecretRef): string {
  if ('env' in ref) {
    const value = process.env[ref.env];
    if (value === undefined || value === '') throw new Error(`environment variable ${ref.env} is not set`);
    return value;
  }
  try {
    // A trailing newline is how editors and `echo` end a file, never part of the secret.
    return readFileSync(ref.file, 'utf8').replace(/\r?\n$/, '');
  } catch (error) {
    throw new Error(`cannot read ${ref.file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
}
