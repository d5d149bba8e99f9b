import { Type, type Static } from '@sinclair/typebox';
import type { ImportResult } from '../../core/pool/import';
import { importResultSchema } from '../../core/views/pool-address';
import type { WireFormat } from '../format';

/**
 * The spec's import answer carries `success` itself: B's flat body has it beside the result; A's
 * envelope already says it, once, so data is the bare result.
 */
export const importAnswerSchemas = {
  a: importResultSchema,
  b: Type.Composite([Type.Object({ success: Type.Literal(true) }), importResultSchema]),
};

export function importAnswer(format: WireFormat, result: ImportResult, message: string): unknown {
  const data: Static<typeof importResultSchema> = result;
  return format.flatSuccessBody(data, message, { withMessage: false });
}
