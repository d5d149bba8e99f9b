import type { Response } from 'express';
import type { Language } from '../i18n';

/**
 * The dashboard chrome's words (navigation, page headings, the header's buttons, list paging) in
 * the payment page's languages (api/pages/i18n.ts), chosen by the same negotiation (pickLanguage:
 * `?lang=`, then Accept-Language, else English), and the pages' buttons and section headings. Form
 * labels, tables and messages stay in English, as do the pages outside the chrome (sign-in).
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
  // The pages' buttons and section headings.
  'Filter',
  'Redeliver',
  'Sign out everywhere',
  'Save',
  'Save password',
  'Remove',
  'Redeliver all failed',
  'Invite',
  'Import',
  'Derive',
  'Create link',
  'Create key',
  'Change role',
  'Add endpoint',
  'Reset',
  'Revoke',
  'Send test event',
  'Rotate secret',
  'Disable',
  'Enable',
  'Delete',
  'Publish',
  'Archive',
  'Export CSV',
  'Redeliver failed deliveries',
  'Derive from an extended public key',
  'Import addresses (CSV)',
  'Invite someone',
  'Add an endpoint',
  'Create an API key',
  'Create a payment link',
  'Sessions',
  'Address pools',
  'Chains',
  'Completed volume per day (30 days)',
  'Events and webhook deliveries',
  'Webhook endpoints needing attention',
  // Reconciliation (issue 40).
  'Needs attention',
  'Transfer',
  'Attribute',
  'Attribute to this order',
  'Settle by hand',
  'Payments to its address',
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
  Filter: 'Filtrar',
  Redeliver: 'Reenviar',
  'Sign out everywhere': 'Cerrar sesión en todas partes',
  Save: 'Guardar',
  'Save password': 'Guardar contraseña',
  Remove: 'Quitar',
  'Redeliver all failed': 'Reenviar todas las fallidas',
  Invite: 'Invitar',
  Import: 'Importar',
  Derive: 'Derivar',
  'Create link': 'Crear enlace',
  'Create key': 'Crear clave',
  'Change role': 'Cambiar rol',
  'Add endpoint': 'Añadir endpoint',
  Reset: 'Restablecer',
  Revoke: 'Revocar',
  'Send test event': 'Enviar evento de prueba',
  'Rotate secret': 'Rotar secreto',
  Disable: 'Desactivar',
  Enable: 'Activar',
  Delete: 'Eliminar',
  Publish: 'Publicar',
  Archive: 'Archivar',
  'Export CSV': 'Exportar CSV',
  'Redeliver failed deliveries': 'Reenviar entregas fallidas',
  'Derive from an extended public key': 'Derivar de una clave pública extendida',
  'Import addresses (CSV)': 'Importar direcciones (CSV)',
  'Invite someone': 'Invitar a alguien',
  'Add an endpoint': 'Añadir un endpoint',
  'Create an API key': 'Crear una clave de API',
  'Create a payment link': 'Crear un enlace de pago',
  Sessions: 'Sesiones',
  'Address pools': 'Reservas de direcciones',
  Chains: 'Cadenas',
  'Completed volume per day (30 days)': 'Volumen completado por día (30 días)',
  'Events and webhook deliveries': 'Eventos y entregas de webhooks',
  'Webhook endpoints needing attention': 'Endpoints de webhooks que requieren atención',
  'Needs attention': 'Requiere atención',
  Transfer: 'Transferencia',
  Attribute: 'Atribuir',
  'Attribute to this order': 'Atribuir a este pedido',
  'Settle by hand': 'Liquidar a mano',
  'Payments to its address': 'Pagos a su dirección',
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
