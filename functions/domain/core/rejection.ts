/**
 * A decision that says no: the API answers it as a problem document with this status and stable code.
 * Lives in the domain so that pure decisions can refuse without knowing about HTTP.
 */
export interface QuotaExcess {
  machineType: string;
  quota: number;
  used: number;
}

export interface Shortfall {
  wanted: number;
  free: number;
}

export class Rejection extends Error {
  override name = 'Rejection';
  readonly status: number;
  readonly code: string;
  readonly errors: Array<{ path: string; message: string }> | undefined;
  /** The bound a refusal for size names (a 413's bytes). */
  readonly limit: number | undefined;
  /** The quota a `quota-exceeded` refusal names, and how much of it the org holds. */
  readonly quota: QuotaExcess | undefined;
  /** The machines an `insufficient-capacity` refusal wanted, and how many of them were free. */
  readonly shortfall: Shortfall | undefined;

  constructor(
    status: number,
    code: string,
    detail: string,
    errors?: Array<{ path: string; message: string }>,
    limit?: number,
    quota?: QuotaExcess,
    shortfall?: Shortfall,
  ) {
    super(detail);
    this.status = status;
    this.code = code;
    this.errors = errors;
    this.limit = limit;
    this.quota = quota;
    this.shortfall = shortfall;
  }
}

export const notFound = (what: string) => new Rejection(404, 'not-found', `${what} was not found`);
export const conflict = (code: string, detail: string, shortfall?: Shortfall) => new Rejection(409, code, detail, undefined, undefined, undefined, shortfall);
export const forbidden = (code: string, detail: string) => new Rejection(403, code, detail);
export const unprocessable = (code: string, detail: string) => new Rejection(422, code, detail);
