import express, { type Request, type Response } from 'express';
import { PublicWriteRefusal } from './refusal';

export interface PublicBody {
  /** A plain HTML form post (works without JavaScript) or JSON (a page's script). */
  kind: 'form' | 'json';
  fields: Record<string, unknown>;
}

type Parser = (req: Request, res: Response, next: (err?: unknown) => void) => void;

/**
 * Reads an anonymous POST's body, at most `limitBytes`: a urlencoded form (flat string fields) or
 * a JSON object. Anything else is refused before a byte of it is kept.
 */
export function publicBodyReader(limitBytes: number): (req: Request, res: Response) => Promise<PublicBody> {
  const form = express.urlencoded({ extended: false, limit: limitBytes, parameterLimit: 50 }) as Parser;
  const json = express.json({ limit: limitBytes, strict: true }) as Parser;
  const run = (parser: Parser, req: Request, res: Response) =>
    new Promise<void>((resolve, reject) => parser(req, res, (err?: unknown) => (err ? reject(err) : resolve())));
  return async (req, res) => {
    const kind = req.is('application/x-www-form-urlencoded') ? 'form' : req.is('application/json') ? 'json' : null;
    if (!kind) throw new PublicWriteRefusal('unsupportedType', 'Send a form (application/x-www-form-urlencoded) or JSON (application/json)');
    try {
      await run(kind === 'form' ? form : json, req, res);
    } catch (err) {
      const type = (err as { type?: string }).type;
      if (type === 'entity.too.large') throw new PublicWriteRefusal('tooLarge', `The request body is larger than ${limitBytes} bytes`);
      throw new PublicWriteRefusal('badBody', kind === 'form' ? 'Malformed form' : 'Malformed JSON');
    }
    const body: unknown = req.body;
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new PublicWriteRefusal('badBody', 'The body must be a form or a JSON object');
    return { kind, fields: body as Record<string, unknown> };
  };
}
