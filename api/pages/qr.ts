import QRCode from 'qrcode';
import { trustedHtml, type Html } from './html';

/** Recently drawn codes: a page polled or reloaded draws the same one again. */
const cache = new Map<string, string>();
const CACHE_LIMIT = 2000;

/**
 * A QR code as inline SVG, made on the server (no script, no image request). The SVG is hidden
 * from assistive technology: the caller labels its container.
 */
export async function qrSvg(text: string): Promise<Html> {
  let svg = cache.get(text);
  if (!svg) {
    const drawn = await QRCode.toString(text, { type: 'svg', errorCorrectionLevel: 'M', margin: 4, color: { dark: '#000000', light: '#ffffff' } });
    svg = drawn.replace('<svg ', '<svg aria-hidden="true" focusable="false" ');
    if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value as string);
    cache.set(text, svg);
  }
  return trustedHtml(svg);
}
