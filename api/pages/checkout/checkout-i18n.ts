import type { Language } from '../i18n';

/**
 * The checkout page's text, in the payment page's languages (api/pages/i18n.ts chooses the
 * language). Its own dictionaries so the pages of wave 3 do not all edit one file.
 */
export interface CheckoutMessages {
  pageTitle: string;
  sellerLabel: (org: string) => string;
  priceLabel: string;
  choosePrompt: string;
  chooseLegend: string;
  amountLabel: string;
  amountHint: (min: string | null, max: string | null) => string;
  pay: string;
  noScriptNote: string;
  openOrderTitle: string;
  openOrderText: string;
  openOrderLink: string;
  soldOutTitle: string;
  soldOutText: string;
  leftText: (n: number) => string;
  goneTitle: string;
  goneText: string;
  busyTitle: string;
  busyText: string;
  crossSiteTitle: string;
  crossSiteText: string;
  tooManyTitle: string;
  tooManyText: string;
  qrLabel: string;
  qrHint: string;
  errorSummary: string;
  amountBelow: (min: string) => string;
  amountAbove: (max: string) => string;
  amountInvalid: string;
  choiceInvalid: string;
  tokenOnNetwork: (token: string, network: string) => string;
  payerChooses: string;
  /** A link priced in USD: the routes it offers (each tokenOnNetwork), as one sentence. */
  payWithRoutes: (routes: string[]) => string;
  /** A link priced in USD: what happens next (the route is picked on the payment page). */
  usdPrompt: string;
  amountLabelUsd: string;
}

const en: CheckoutMessages = {
  pageTitle: 'Checkout',
  sellerLabel: (org) => `Sold by ${org}`,
  priceLabel: 'Price',
  choosePrompt: 'Choose how you want to pay. The next page shows the address to pay to.',
  chooseLegend: 'Token and network',
  amountLabel: 'Amount to pay',
  amountHint: (min, max) => (min && max ? `From ${min} to ${max}.` : min ? `At least ${min}.` : max ? `At most ${max}.` : 'Any amount.'),
  pay: 'Continue to payment',
  noScriptNote: 'This page works without JavaScript.',
  openOrderTitle: 'You have an open payment',
  openOrderText: 'You already started a payment here. Continue it rather than starting a new one.',
  openOrderLink: 'Continue your payment',
  soldOutTitle: 'Sold out',
  soldOutText: 'Every unit is sold or held by an open payment. Units held by payments that are not completed come back when those payments expire.',
  leftText: (n) => (n === 1 ? '1 left' : `${n} left`),
  goneTitle: 'This payment link is no longer available',
  goneText: 'The seller has closed this link or it has expired. Ask the seller for a new one.',
  busyTitle: 'Please try again in a few minutes',
  busyText: 'This checkout cannot take more payments right now. Nothing was charged; please come back in a few minutes.',
  crossSiteTitle: 'Please start from the checkout page',
  crossSiteText: 'This request did not come from the checkout page. Open the payment link again and choose how to pay.',
  tooManyTitle: 'Too many attempts',
  tooManyText: 'Please wait a while before starting another payment. A payment you already started is not affected.',
  qrLabel: 'QR code of this checkout page',
  qrHint: 'Scan to open this checkout on another device (for printing).',
  errorSummary: 'Please correct this:',
  amountBelow: (min) => `The amount must be at least ${min}.`,
  amountAbove: (max) => `The amount must be at most ${max}.`,
  amountInvalid: 'Enter an amount such as 10 or 10.50.',
  choiceInvalid: 'Choose one of the offered tokens and networks.',
  tokenOnNetwork: (token, network) => `${token} on ${network}`,
  payerChooses: 'You choose the amount',
  payWithRoutes: (routes) => `Pay with ${routes.join(', ')}.`,
  usdPrompt: 'Continue to the payment page: there you choose the token and network you pay with, and it shows the address to pay to.',
  amountLabelUsd: 'Amount to pay (USD)',
};

const es: CheckoutMessages = {
  pageTitle: 'Pago',
  sellerLabel: (org) => `Vendido por ${org}`,
  priceLabel: 'Precio',
  choosePrompt: 'Elija cómo quiere pagar. La página siguiente muestra la dirección a la que pagar.',
  chooseLegend: 'Token y red',
  amountLabel: 'Importe a pagar',
  amountHint: (min, max) => (min && max ? `De ${min} a ${max}.` : min ? `Al menos ${min}.` : max ? `Como máximo ${max}.` : 'Cualquier importe.'),
  pay: 'Continuar al pago',
  noScriptNote: 'Esta página funciona sin JavaScript.',
  openOrderTitle: 'Tiene un pago abierto',
  openOrderText: 'Ya empezó un pago aquí. Continúelo en lugar de empezar uno nuevo.',
  openOrderLink: 'Continuar su pago',
  soldOutTitle: 'Agotado',
  soldOutText: 'Todas las unidades están vendidas o reservadas por un pago abierto. Las reservadas por pagos no completados vuelven cuando esos pagos vencen.',
  leftText: (n) => (n === 1 ? 'Queda 1' : `Quedan ${n}`),
  goneTitle: 'Este enlace de pago ya no está disponible',
  goneText: 'El vendedor ha cerrado este enlace o ha vencido. Pida uno nuevo al vendedor.',
  busyTitle: 'Inténtelo de nuevo en unos minutos',
  busyText: 'Este pago no puede aceptar más pagos ahora mismo. No se ha cobrado nada; vuelva en unos minutos.',
  crossSiteTitle: 'Empiece desde la página de pago',
  crossSiteText: 'Esta solicitud no vino de la página de pago. Abra de nuevo el enlace de pago y elija cómo pagar.',
  tooManyTitle: 'Demasiados intentos',
  tooManyText: 'Espere un rato antes de empezar otro pago. Un pago ya empezado no se ve afectado.',
  qrLabel: 'Código QR de esta página de pago',
  qrHint: 'Escanéelo para abrir este pago en otro dispositivo (para imprimir).',
  errorSummary: 'Corrija esto:',
  amountBelow: (min) => `El importe debe ser al menos ${min}.`,
  amountAbove: (max) => `El importe debe ser como máximo ${max}.`,
  amountInvalid: 'Escriba un importe como 10 o 10.50.',
  choiceInvalid: 'Elija uno de los tokens y redes ofrecidos.',
  tokenOnNetwork: (token, network) => `${token} en ${network}`,
  payerChooses: 'Usted elige el importe',
  payWithRoutes: (routes) => `Pague con ${routes.join(', ')}.`,
  usdPrompt: 'Continúe a la página de pago: allí elige el token y la red con que paga, y verá la dirección a la que pagar.',
  amountLabelUsd: 'Importe a pagar (USD)',
};

export const CHECKOUT_MESSAGES: Record<Language, CheckoutMessages> = { en, es };
