// `npm run client:generate`: writes the typed client's path types (clients/typescript/src/generated/)
// from the OpenAPI document of each wire format, with openapi-typescript. The files are committed
// (the client package ships them); test/clients/typescript-client.test.ts fails when they no
// longer match the document, so the client cannot drift from the API.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { clientTypesFor, GENERATED_DIR, generatedFileOf } from './client-types';

async function main(): Promise<void> {
  for (const style of ['a', 'b'] as const) {
    const file = path.join(GENERATED_DIR, generatedFileOf(style));
    writeFileSync(file, await clientTypesFor(style));
    process.stdout.write(`wrote ${path.relative(process.cwd(), file)}\n`);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
