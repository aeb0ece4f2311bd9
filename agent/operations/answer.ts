/** What a route answers: a status and a JSON body (the agent contract's shapes). */
export interface Answer {
  status: number;
  body: unknown;
}

export const answer = (status: number, body: unknown): Answer => ({ status, body });
export const refusal = (status: number, code: string, message: string): Answer => ({ status, body: { code, message } });
