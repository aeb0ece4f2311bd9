import * as z from 'zod';

// A machine id's rule, in a module of its own: the site agent's contract needs it in every function, the request
// schemas (schemas.ts), built at a cold start wherever imported, only in the API.

export const machineId = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/, 'letters, digits and . _ : - (at most 128)');
