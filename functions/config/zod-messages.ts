import { config } from 'zod/mini';
import en from 'zod/v4/locales/en.js';

// What every function loads (the site config, the site agent's contract) uses zod/mini: zod's classic API costs a
// cold start about 10 ms to build. Unlike the classic API, zod/mini loads no messages; importing this module gives
// it the same English ones, so a problem reads the same whichever API found it. (One locale by its own path:
// `z.locales` would bring every locale into the bundle, as would re-exporting the `z` namespace.)
config(en());
