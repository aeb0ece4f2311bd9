import type { Rejection } from '#domain/core/rejection.ts';

// RFC 9457 problem documents: every error the API answers with has this shape and a stable `code`.

export interface FieldError {
  path: string;
  message: string;
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  errors?: FieldError[];
  /** With 413: the most bytes the route takes in one body. */
  limit?: number;
  /** With 409 `quota-exceeded`: the machine type, the org's quota of it and how many it holds. */
  machineType?: string;
  quota?: number;
  used?: number;
  /** With 409 `insufficient-capacity`: the machines a reservation asked for, and how many of them were free. */
  wanted?: number;
  free?: number;
}

const titles: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
};

/** Refusals are decided in the domain; HTTP only renders them. */
export { Rejection as ProblemError, conflict, forbidden, notFound } from '#domain/core/rejection.ts';

export function toProblem(error: Rejection): Problem {
  return {
    type: `https://fleetward.dev/problems/${error.code}`,
    title: titles[error.status] ?? 'Error',
    status: error.status,
    detail: error.message,
    code: error.code,
    ...(error.errors ? { errors: error.errors } : {}),
    ...(error.limit !== undefined ? { limit: error.limit } : {}),
    ...(error.quota ?? {}),
    ...(error.shortfall ?? {}),
  };
}

export const problemContentType = 'application/problem+json';

/** How long a client waits before it tries a 503 again: the site's throttles pass within a second or so. */
export const RETRY_AFTER_SECONDS = 1;

/** The HTTP answer for a problem, in the shape both the Lambda result and the local server write out. */
export const problemResponse = (error: Rejection, headers: Record<string, string> = {}) => ({
  statusCode: error.status,
  headers: { 'content-type': problemContentType, ...(error.status === 503 ? { 'retry-after': String(RETRY_AFTER_SECONDS) } : {}), ...headers },
  body: JSON.stringify(toProblem(error)),
});
