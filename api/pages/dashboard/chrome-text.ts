import type { Response } from 'express';
import type { Language } from '../i18n';

/**
 * The dashboard chrome's words (navigation, page headings, the header's buttons, list paging) in
 * the payment page's languages (api/pages/i18n.ts), chosen by the same negotiation (pickLanguage:
 * `?lang=`, then Accept-Language, else English). The pages' own forms stay in English.
 */
const CHROME_TEXT = [
  'Overview',
  'Orders',
  'Deposits',
  'Transfers',
  'Payment links',
  'Address pool',
  'Webhooks',
  'API keys',
  'Members',
  'Configuration',
  'Audit log',
  'Account',
  'Order',
  'Unattributed transfers',
  'Webhook deliveries',
  'Dashboard',
  'Organization',
  'Switch',
  'Sign out',
  'Skip to content',
  'Language',
  'First',
  'Previous',
  'Next',
  'in all',
  'Page',
  'of',
] as const;
export type ChromeText = (typeof CHROME_TEXT)[number];

const es: Record<ChromeText, string> = {
  Overview: 'Resumen',
  Orders: 'Pedidos',
  Deposits: 'Depósitos',
  Transfers: 'Transferencias',
  'Payment links': 'Enlaces de pago',
  'Address pool': 'Reserva de direcciones',
  Webhooks: 'Webhooks',
  'API keys': 'Claves de API',
  Members: 'Miembros',
  Configuration: 'Configuración',
  'Audit log': 'Registro de auditoría',
  Account: 'Cuenta',
  Order: 'Pedido',
  'Unattributed transfers': 'Transferencias sin atribuir',
  'Webhook deliveries': 'Entregas de webhooks',
  Dashboard: 'Panel',
  Organization: 'Organización',
  Switch: 'Cambiar',
  'Sign out': 'Cerrar sesión',
  'Skip to content': 'Saltar al contenido',
  Language: 'Idioma',
  First: 'Primera',
  Previous: 'Anterior',
  Next: 'Siguiente',
  'in all': 'en total',
  Page: 'Página',
  of: 'de',
};

const DICTIONARIES: Record<Exclude<Language, 'en'>, Record<ChromeText, string>> = { es };

function isChromeText(text: string): text is ChromeText {
  return (CHROME_TEXT as readonly string[]).includes(text);
}

/** The chrome's word in the language; a text that is not one of the chrome's (a name, a reference) as it is. */
export function chromeText(lang: Language, text: string): string {
  if (lang === 'en' || !isChromeText(text)) return text;
  return DICTIONARIES[lang][text];
}

/** The language the page's request negotiated (set for every dashboard request in web.ts). */
export function langOf(res: Response): Language {
  return (res.locals.lang as Language | undefined) ?? 'en';
}
