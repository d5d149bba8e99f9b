import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Request, Response } from 'express';
import type { Logger } from '../core/platform/logger';
import type { CsvDownload } from '../core/exports/csv-download';
import { logRequestError } from './request-log';

/**
 * Sends a CSV download (core/exports/) as an attachment, batch by batch: the next batch is read
 * only when the socket has taken the last (pipeline honours res.write's backpressure), and a client
 * that goes away stops the reading. Its header and first batch were read before this, so every
 * refusal was answered in the deployment's format; a failure from here on can only cut the
 * download (the client sees it incomplete, never a truncated file that looks whole), and is logged.
 */
export async function sendCsvDownload(logger: Logger, req: Request, res: Response, download: CsvDownload): Promise<void> {
  res.status(200);
  res.setHeader('Content-Type', 'text/csv; charset=utf-8');
  res.setHeader('Content-Disposition', `attachment; filename="${download.fileName}"`);
  res.setHeader('Cache-Control', 'no-store');
  // A HEAD answer has no body: reading the whole export for it would be work thrown away.
  if (req.method === 'HEAD') {
    res.end();
    return;
  }
  try {
    await pipeline(Readable.from(download.chunks, { objectMode: false }), res);
  } catch (err) {
    // The client closed the connection: nothing failed, the reading just stopped.
    if ((err as { code?: string }).code === 'ERR_STREAM_PREMATURE_CLOSE') return;
    logRequestError(logger, req, res, err);
    res.destroy();
  }
}
