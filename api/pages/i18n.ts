import type { Request } from 'express';

/**
 * Public pages' text in English and Spanish. Chosen by `?lang=` first, then Accept-Language;
 * English otherwise. Wave 3's pages add their keys to the same dictionaries.
 */
export const LANGUAGES = ['en', 'es'] as const;
export type Language = (typeof LANGUAGES)[number];
export const LANGUAGE_NAMES: Record<Language, string> = { en: 'English', es: 'Español' };

export function pickLanguage(req: Request): Language {
  const asked = typeof req.query.lang === 'string' ? req.query.lang.toLowerCase() : '';
  if ((LANGUAGES as readonly string[]).includes(asked)) return asked as Language;
  const accepted = req.acceptsLanguages(...LANGUAGES);
  return (accepted || 'en') as Language;
}

export interface Messages {
  pageTitle: string;
  paymentTo: (org: string) => string;
  /** Before the organization's support contact (an e-mail address or a link). */
  supportLabel: string;
  /** Beside the merchant's reference of the order. */
  orderReferenceLabel: string;
  headings: Record<'choosing' | 'awaiting' | 'underpaid' | 'confirming' | 'grace' | 'paid' | 'overpaid' | 'expired' | 'reviewing', string>;
  /** A USD order: pick the token and network to pay with. */
  choosing: string;
  priceLabel: string;
  /** The route picker's legend and its submit button (a token on a network, with its amount). */
  routeLegend: string;
  payWithRoute: (token: string, network: string, amount: string) => string;
  /** The switch, collapsed under the payment instructions. */
  switchRoute: string;
  /** A payment by a route the payer switched away from: it still counts. */
  otherRoutePayment: (amount: string, network: string) => string;
  /** A route choice the order does not offer (a form changed by hand): nothing changed. */
  routeRefused: string;
  awaiting: string;
  underpaid: (received: string, remaining: string) => string;
  confirming: (current: number, required: number) => string;
  solidifying: string;
  grace: string;
  /** The grace text while the order's chain is degraded: promises nothing the service cannot see. */
  graceDelayed: (network: string) => string;
  /** Shown while the order's chain is degraded and the order can still change. */
  detectionDelayed: (network: string) => string;
  paid: string;
  overpaid: (excess: string) => string;
  expired: string;
  expiredPartial: (received: string) => string;
  /** Expired, but a payment arrived after it ended: the merchant reviews it. */
  reviewing: string;
  amountLabel: string;
  remainderLabel: string;
  receivedLabel: string;
  networkLabel: string;
  tokenOnNetwork: (token: string, network: string) => string;
  warning: (token: string, network: string) => string;
  addressLabel: string;
  copy: string;
  copyAmount: string;
  copyAddress: string;
  copied: string;
  qrLabel: string;
  qrHint: string;
  openWallet: string;
  timeLeft: string;
  confirmationsLabel: string;
  transactionLabel: string;
  continueToMerchant: string;
  returnToMerchant: string;
  autoRefresh: string;
  notFoundTitle: string;
  notFoundText: string;
  tooManyTitle: string;
  tooManyText: string;
  errorTitle: string;
  errorText: string;
  languageLabel: string;
}

const en: Messages = {
  pageTitle: 'Payment',
  paymentTo: (org) => `Payment to ${org}`,
  orderReferenceLabel: 'Order',
  supportLabel: 'Questions about this payment? Contact',
  headings: {
    choosing: 'Choose how to pay',
    awaiting: 'Waiting for your payment',
    underpaid: 'Partial payment received',
    confirming: 'Payment seen, confirming',
    grace: 'Time to pay is over',
    paid: 'Payment received',
    overpaid: 'Payment received',
    expired: 'Payment request expired',
    reviewing: 'Payment seen, being reviewed',
  },
  choosing: 'Pick the token and network your wallet holds. The price is in US dollars; each stablecoin counts one for one.',
  priceLabel: 'Price',
  routeLegend: 'Pay with',
  payWithRoute: (token, network, amount) => `${amount} ${token} on ${network}`,
  switchRoute: 'Pay with another token or network',
  otherRoutePayment: (amount, network) => `Your payment of ${amount} on ${network}, sent to the address of the route you chose first, counts toward this order.`,
  routeRefused: 'That token and network is not one this order can be paid with. Nothing was changed: go back to the payment page and pick one of its buttons.',
  awaiting: 'Send the amount below to the address below. This page updates by itself.',
  underpaid: (received, remaining) => `We received ${received}. Send the remainder: ${remaining}.`,
  confirming: (current, required) => `Confirmations: ${current} of ${required}. No need to do anything.`,
  solidifying: 'Waiting for the network to make the payment final (solidification). No need to do anything.',
  grace:
    'Please do not send a payment now. A payment you have already sent will still be recognised: this page keeps watching and updates by itself.',
  graceDelayed: (network) =>
    `Please do not send a payment now. Payments on ${network} are being detected late at the moment, so this page cannot show a payment you have already sent yet. Keep your transaction reference: if this page does not show your payment once detection resumes, contact the merchant.`,
  detectionDelayed: (network) =>
    `Payments on ${network} are being detected late at the moment: a payment may take longer than usual to appear here. If it does not appear once detection resumes, contact the merchant with your transaction reference.`,
  paid: 'Thank you. Your payment is confirmed.',
  overpaid: (excess) => `You sent ${excess} more than requested. Contact the merchant about the difference.`,
  expired: 'This payment request has expired. Do not send a payment to this address.',
  reviewing:
    'Payment seen, being reviewed: a payment reached this address after the request expired, so it was not completed automatically. The merchant will review it and settle or refund it. Do not send another payment.',
  expiredPartial: (received) =>
    `We received ${received}, less than requested, so the order was not completed. Contact the merchant to have this amount refunded or settled.`,
  amountLabel: 'Amount',
  remainderLabel: 'Remainder to send',
  receivedLabel: 'Received',
  networkLabel: 'Token and network',
  tokenOnNetwork: (token, network) => `${token} on ${network}`,
  warning: (token, network) =>
    `Send only ${token} on ${network}. Any other token, or ${token} on another network, will not reach this payment and may be lost.`,
  addressLabel: 'Address',
  copy: 'Copy',
  copyAmount: 'Copy amount',
  copyAddress: 'Copy address',
  copied: 'Copied',
  qrLabel: 'QR code with the payment for your wallet app',
  qrHint: 'Scan with your wallet app.',
  openWallet: 'Open in wallet app',
  timeLeft: 'Time left',
  confirmationsLabel: 'Confirmations',
  transactionLabel: 'Transaction',
  continueToMerchant: 'Continue to the merchant',
  returnToMerchant: 'Return to the merchant',
  autoRefresh: 'This page refreshes itself every few seconds.',
  notFoundTitle: 'Payment not found',
  notFoundText: 'This payment link is not valid. Check the link you were given, or ask the merchant for a new one.',
  tooManyTitle: 'Too many requests',
  tooManyText: 'Please wait a moment, then reload this page.',
  errorTitle: 'Something went wrong',
  errorText: 'The payment page could not be shown just now. Please reload in a moment; a payment you sent is not affected.',
  languageLabel: 'Language',
};

const es: Messages = {
  pageTitle: 'Pago',
  paymentTo: (org) => `Pago a ${org}`,
  orderReferenceLabel: 'Pedido',
  supportLabel: '¿Preguntas sobre este pago? Contacto:',
  headings: {
    choosing: 'Elija cómo pagar',
    awaiting: 'Esperando su pago',
    underpaid: 'Pago parcial recibido',
    confirming: 'Pago detectado, confirmando',
    grace: 'El plazo para pagar ha terminado',
    paid: 'Pago recibido',
    overpaid: 'Pago recibido',
    expired: 'Solicitud de pago vencida',
    reviewing: 'Pago recibido, en revisión',
  },
  choosing: 'Elija el token y la red que tiene su billetera. El precio está en dólares estadounidenses; cada stablecoin cuenta uno por uno.',
  priceLabel: 'Precio',
  routeLegend: 'Pagar con',
  payWithRoute: (token, network, amount) => `${amount} ${token} en ${network}`,
  switchRoute: 'Pagar con otro token u otra red',
  otherRoutePayment: (amount, network) => `Su pago de ${amount} en ${network}, enviado a la dirección de la primera opción que eligió, cuenta para este pedido.`,
  routeRefused: 'Ese token y esa red no sirven para pagar este pedido. No se cambió nada: vuelva a la página de pago y elija uno de sus botones.',
  awaiting: 'Envíe el importe indicado a la dirección indicada. Esta página se actualiza sola.',
  underpaid: (received, remaining) => `Hemos recibido ${received}. Envíe el resto: ${remaining}.`,
  confirming: (current, required) => `Confirmaciones: ${current} de ${required}. No tiene que hacer nada.`,
  solidifying: 'Esperando a que la red haga definitivo el pago (solidificación). No tiene que hacer nada.',
  grace:
    'No envíe ningún pago ahora. Un pago que ya haya enviado se reconocerá igualmente: esta página sigue vigilando y se actualiza sola.',
  graceDelayed: (network) =>
    `No envíe ningún pago ahora. Los pagos en ${network} se están detectando con retraso en este momento, por lo que esta página aún no puede mostrar un pago que ya haya enviado. Guarde la referencia de su transacción: si esta página no muestra su pago cuando se reanude la detección, contacte con el comercio.`,
  detectionDelayed: (network) =>
    `Los pagos en ${network} se están detectando con retraso en este momento: un pago puede tardar más de lo habitual en aparecer aquí. Si no aparece cuando se reanude la detección, contacte con el comercio con la referencia de su transacción.`,
  paid: 'Gracias. Su pago está confirmado.',
  overpaid: (excess) => `Ha enviado ${excess} más de lo solicitado. Contacte con el comercio por la diferencia.`,
  expired: 'Esta solicitud de pago ha vencido. No envíe pagos a esta dirección.',
  reviewing:
    'Pago recibido, en revisión: llegó un pago a esta dirección después del vencimiento de la solicitud, por lo que no se completó automáticamente. El comercio lo revisará y lo liquidará o devolverá. No envíe otro pago.',
  expiredPartial: (received) =>
    `Hemos recibido ${received}, menos de lo solicitado, por lo que el pedido no se completó. Contacte con el comercio para que le devuelvan o liquiden este importe.`,
  amountLabel: 'Importe',
  remainderLabel: 'Resto a enviar',
  receivedLabel: 'Recibido',
  networkLabel: 'Token y red',
  tokenOnNetwork: (token, network) => `${token} en ${network}`,
  warning: (token, network) =>
    `Envíe solo ${token} en ${network}. Cualquier otro token, o ${token} en otra red, no llegará a este pago y puede perderse.`,
  addressLabel: 'Dirección',
  copy: 'Copiar',
  copyAmount: 'Copiar importe',
  copyAddress: 'Copiar dirección',
  copied: 'Copiado',
  qrLabel: 'Código QR con el pago para su aplicación de monedero',
  qrHint: 'Escanéelo con su aplicación de monedero.',
  openWallet: 'Abrir en el monedero',
  timeLeft: 'Tiempo restante',
  confirmationsLabel: 'Confirmaciones',
  transactionLabel: 'Transacción',
  continueToMerchant: 'Continuar al comercio',
  returnToMerchant: 'Volver al comercio',
  autoRefresh: 'Esta página se actualiza sola cada pocos segundos.',
  notFoundTitle: 'Pago no encontrado',
  notFoundText: 'Este enlace de pago no es válido. Compruebe el enlace recibido o pida uno nuevo al comercio.',
  tooManyTitle: 'Demasiadas solicitudes',
  tooManyText: 'Espere un momento y vuelva a cargar esta página.',
  errorTitle: 'Algo ha fallado',
  errorText: 'No se pudo mostrar la página de pago. Vuelva a cargarla en un momento; un pago enviado no se ve afectado.',
  languageLabel: 'Idioma',
};

export const MESSAGES: Record<Language, Messages> = { en, es };
