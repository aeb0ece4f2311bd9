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
}

const titles: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
};

export class ProblemError extends Error {
  override name = 'ProblemError';
  readonly status: number;
  readonly code: string;
  readonly errors: FieldError[] | undefined;

  constructor(status: number, code: string, detail: string, errors?: FieldError[]) {
    super(detail);
    this.status = status;
    this.code = code;
    this.errors = errors;
  }

  toProblem(): Problem {
    return {
      type: `https://fleetward.dev/problems/${this.code}`,
      title: titles[this.status] ?? 'Error',
      status: this.status,
      detail: this.message,
      code: this.code,
      ...(this.errors ? { errors: this.errors } : {}),
    };
  }
}

export const notFound = (what: string) => new ProblemError(404, 'not-found', `${what} was not found`);
export const conflict = (code: string, detail: string) => new ProblemError(409, code, detail);
export const forbidden = (code: string, detail: string) => new ProblemError(403, code, detail);
export const unprocessable = (code: string, detail: string, errors?: FieldError[]) =>
  new ProblemError(422, code, detail, errors);
