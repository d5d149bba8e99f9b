/**
 * CSV lines a spreadsheet opens safely (RFC 4180 quoting, CRLF). Every cell is quoted, and a cell
 * that starts with a formula character (=, +, -, @, tab, CR) gets a leading apostrophe: spreadsheets
 * run such cells as formulas, and references and metadata are the merchant's customers' text.
 * No CSV writer library is a dependency (csv-parse only reads), so this small one is ours.
 */
export function csvCell(value: unknown): string {
  const text = value === null || value === undefined ? '' : String(value);
  const inert = /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
  return `"${inert.replace(/"/g, '""')}"`;
}

export function csvLine(cells: readonly unknown[]): string {
  return `${cells.map(csvCell).join(',')}\r\n`;
}
