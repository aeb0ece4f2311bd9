import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';

// zod with `.openapi(name)`, which names a schema as an OpenAPI component. Modules that name schemas import `z`
// from here, so the extension is in place before their schemas are built.
extendZodWithOpenApi(z);

export { z };
