/** Someone else changed a record between our read and our write: reload, decide again. */
export class StaleWriteError extends Error {
  override name = 'StaleWriteError';
}
