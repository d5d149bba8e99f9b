import { csvLine } from './spreadsheet-csv';

/**
 * A CSV file being read from the database batch by batch, never whole: what the API's export
 * routes and the dashboard's download buttons send. `chunks` yields the header row with the first
 * batch, then one string per batch; the next batch is read only when the reader asks for it, so a
 * slow client holds one batch in memory and no database connection between batches.
 */
export interface CsvDownload {
  fileName: string;
  chunks: AsyncIterable<string>;
}

/** Rows per batch: one short indexed query each (a few milliseconds), a few hundred KB of text. */
export const EXPORT_BATCH_ROWS = 2_000;

export interface CsvSource<R> {
  fileName: string;
  header: readonly string[];
  /** The next `limit` rows in the export's order after `after` (null: from the start). */
  readBatch(after: R | null, limit: number): Promise<R[]>;
  cells(row: R): readonly unknown[];
}

/**
 * Opens a download: reads the first batch now, so a database that cannot answer is an error
 * answer in the deployment's format rather than a download cut after its header row.
 */
export async function openCsvDownload<R>(source: CsvSource<R>, batchSize = EXPORT_BATCH_ROWS): Promise<CsvDownload> {
  const first = await source.readBatch(null, batchSize);
  const text = (rows: R[]) => rows.map((row) => csvLine(source.cells(row))).join('');
  async function* chunks(): AsyncGenerator<string> {
    let batch = first;
    yield csvLine(source.header) + text(batch);
    while (batch.length === batchSize) {
      batch = await source.readBatch(batch[batch.length - 1], batchSize);
      if (batch.length > 0) yield text(batch);
    }
  }
  return { fileName: source.fileName, chunks: chunks() };
}
