// A machine id's rule, in a module of its own and without zod: the site agent's contract (zod/mini, in every
// function) and the API's request schemas (zod, only in the API) each build their schema from it.

export const machineIdRule = { pattern: /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/, message: 'letters, digits and . _ : - (at most 128)' } as const;
