import type { Language } from '../i18n';
import type { DestinationRefusal } from '../../../core/refunds/destination';

/**
 * The refund claim page's text (issue 42), in the payment page's languages (api/pages/i18n.ts
 * chooses the language). Every refused address gets a sentence the payer can act on.
 */
export interface RefundMessages {
  pageTitle: string;
  fromLabel: (org: string) => string;
  intro: string;
  amountLabel: string;
  networkLabel: string;
  tokenOnNetwork: (token: string, network: string) => string;
  tokenContractLabel: string;
  destinationLabel: string;
  destinationHint: (family: string) => string;
  confirmationLabel: string;
  confirmationHint: string;
  submit: string;
  expiresText: (at: string) => string;
  errorSummary: string;
  refusal: (r: DestinationRefusal | { code: 'not_claimable' }) => string;
  claimedTitle: string;
  claimedText: (address: string) => string;
  approvedTitle: string;
  approvedText: (address: string) => string;
  completedTitle: string;
  completedText: (address: string) => string;
  goneTitle: string;
  goneText: string;
  crossSiteTitle: string;
  crossSiteText: string;
  tooManyTitle: string;
  tooManyText: string;
  busyTitle: string;
  busyText: string;
}

const FAMILY_HINT_EN: Record<string, string> = {
  evm: 'An address starting with 0x, 42 characters. Use the exact capitalisation your wallet shows, or all lower case.',
  tron: 'A Tron address starting with T, 34 characters.',
  solana: 'Your Solana wallet address (32 to 44 characters), not a token account.',
};
const FAMILY_HINT_ES: Record<string, string> = {
  evm: 'Una dirección que empieza por 0x, de 42 caracteres. Use las mayúsculas exactas que muestra su billetera, o todo en minúsculas.',
  tron: 'Una dirección de Tron que empieza por T, de 34 caracteres.',
  solana: 'La dirección de su billetera de Solana (de 32 a 44 caracteres), no una cuenta de token.',
};

const en: RefundMessages = {
  pageTitle: 'Refund',
  fromLabel: (org) => `Refund from ${org}`,
  intro: 'Tell us where to send your refund. Give an address of a wallet you control on this network; an exchange deposit address may lose it.',
  amountLabel: 'Amount',
  networkLabel: 'Token and network',
  tokenOnNetwork: (token, network) => `${token} on ${network}`,
  tokenContractLabel: 'Token contract',
  destinationLabel: 'Your address',
  destinationHint: (family) => FAMILY_HINT_EN[family] ?? '',
  confirmationLabel: 'Your address again',
  confirmationHint: 'Type or paste it once more, to be sure.',
  submit: 'Send my refund here',
  expiresText: (at) => `This link works until ${at}.`,
  errorSummary: 'This address cannot be used:',
  refusal: (r) => {
    switch (r.code) {
      case 'empty':
        return 'Enter the address to send the refund to.';
      case 'mismatch':
        return 'The two addresses are not the same. Type the same address in both fields.';
      case 'invalid':
        return `This is not a valid address on this network (${r.detail}). Check it and try again.`;
      case 'zero_address':
        return 'This is the zero address: tokens sent there are lost. Give your own wallet address.';
      case 'token_contract':
        return 'This is the token contract itself: tokens sent there are lost. Give your own wallet address.';
      case 'pool_address':
        return 'This is a payment address of this service, not your wallet. Give your own wallet address.';
      case 'off_curve':
        return 'This Solana address is a program address that no wallet can sign for. Give your wallet\'s own address.';
      case 'not_claimable':
        return 'This refund can no longer be claimed.';
    }
  },
  claimedTitle: 'Thank you: we have your address',
  claimedText: (address) => `The refund will be sent to ${address}. The merchant reviews it and sends it from their wallet; you do not need to do anything more.`,
  approvedTitle: 'Your refund is on its way',
  approvedText: (address) => `The merchant approved the refund to ${address} and is sending it from their wallet.`,
  completedTitle: 'Your refund was sent',
  completedText: (address) => `The refund was paid to ${address}.`,
  goneTitle: 'This refund link is no longer available',
  goneText: 'It was cancelled or it expired. Ask the merchant for a new one.',
  crossSiteTitle: 'Please start from the refund page',
  crossSiteText: 'This request did not come from the refund page. Open your refund link again.',
  tooManyTitle: 'Too many attempts',
  tooManyText: 'Please wait a while before trying again.',
  busyTitle: 'Please try again in a few minutes',
  busyText: 'Nothing was changed; please come back in a few minutes.',
};

const es: RefundMessages = {
  pageTitle: 'Reembolso',
  fromLabel: (org) => `Reembolso de ${org}`,
  intro: 'Díganos adónde enviar su reembolso. Indique una dirección de una billetera que usted controle en esta red; una dirección de depósito de un exchange podría perderlo.',
  amountLabel: 'Importe',
  networkLabel: 'Token y red',
  tokenOnNetwork: (token, network) => `${token} en ${network}`,
  tokenContractLabel: 'Contrato del token',
  destinationLabel: 'Su dirección',
  destinationHint: (family) => FAMILY_HINT_ES[family] ?? '',
  confirmationLabel: 'Su dirección otra vez',
  confirmationHint: 'Escríbala o péguela una vez más, para estar seguros.',
  submit: 'Enviar mi reembolso aquí',
  expiresText: (at) => `Este enlace funciona hasta el ${at}.`,
  errorSummary: 'Esta dirección no se puede usar:',
  refusal: (r) => {
    switch (r.code) {
      case 'empty':
        return 'Escriba la dirección a la que enviar el reembolso.';
      case 'mismatch':
        return 'Las dos direcciones no son iguales. Escriba la misma dirección en ambos campos.';
      case 'invalid':
        return `No es una dirección válida en esta red (${r.detail}). Revísela e inténtelo de nuevo.`;
      case 'zero_address':
        return 'Es la dirección cero: los tokens enviados allí se pierden. Indique la dirección de su billetera.';
      case 'token_contract':
        return 'Es el contrato del propio token: los tokens enviados allí se pierden. Indique la dirección de su billetera.';
      case 'pool_address':
        return 'Es una dirección de pago de este servicio, no su billetera. Indique la dirección de su billetera.';
      case 'off_curve':
        return 'Esta dirección de Solana es una dirección de programa para la que ninguna billetera puede firmar. Indique la dirección de su billetera.';
      case 'not_claimable':
        return 'Este reembolso ya no se puede reclamar.';
    }
  },
  claimedTitle: 'Gracias: tenemos su dirección',
  claimedText: (address) => `El reembolso se enviará a ${address}. El comercio lo revisa y lo envía desde su billetera; no tiene que hacer nada más.`,
  approvedTitle: 'Su reembolso está en camino',
  approvedText: (address) => `El comercio aprobó el reembolso a ${address} y lo está enviando desde su billetera.`,
  completedTitle: 'Su reembolso fue enviado',
  completedText: (address) => `El reembolso se pagó a ${address}.`,
  goneTitle: 'Este enlace de reembolso ya no está disponible',
  goneText: 'Se canceló o venció. Pida uno nuevo al comercio.',
  crossSiteTitle: 'Empiece desde la página del reembolso',
  crossSiteText: 'Esta solicitud no vino de la página del reembolso. Abra de nuevo su enlace de reembolso.',
  tooManyTitle: 'Demasiados intentos',
  tooManyText: 'Espere un rato antes de volver a intentarlo.',
  busyTitle: 'Inténtelo de nuevo en unos minutos',
  busyText: 'No se ha cambiado nada; vuelva en unos minutos.',
};

export const REFUND_MESSAGES: Record<Language, RefundMessages> = { en, es };

/** A payout's claim page (POST /payouts without a destination): the same page, worded as a payment, not a refund. */
type PayoutWording = Pick<RefundMessages, 'pageTitle' | 'fromLabel' | 'intro' | 'submit' | 'claimedText' | 'approvedTitle' | 'approvedText' | 'completedTitle' | 'completedText'>;

const PAYOUT_WORDING: Record<Language, PayoutWording> = {
  en: {
    pageTitle: 'Payment',
    fromLabel: (org) => `Payment from ${org}`,
    intro: 'Tell us where to send your payment. Give an address of a wallet you control on this network; an exchange deposit address may lose it.',
    submit: 'Send my payment here',
    claimedText: (address) => `The payment will be sent to ${address}. The sender reviews it and sends it from their wallet; you do not need to do anything more.`,
    approvedTitle: 'Your payment is on its way',
    approvedText: (address) => `The sender approved the payment to ${address} and is sending it from their wallet.`,
    completedTitle: 'Your payment was sent',
    completedText: (address) => `The payment was made to ${address}.`,
  },
  es: {
    pageTitle: 'Pago',
    fromLabel: (org) => `Pago de ${org}`,
    intro: 'Díganos adónde enviar su pago. Indique una dirección de una billetera que usted controle en esta red; una dirección de depósito de un exchange podría perderlo.',
    submit: 'Enviar mi pago aquí',
    claimedText: (address) => `El pago se enviará a ${address}. El remitente lo revisa y lo envía desde su billetera; no necesita hacer nada más.`,
    approvedTitle: 'Su pago está en camino',
    approvedText: (address) => `El remitente aprobó el pago a ${address} y lo está enviando desde su billetera.`,
    completedTitle: 'Su pago fue enviado',
    completedText: (address) => `El pago se hizo a ${address}.`,
  },
};

/** The claim page's text for a refund or a payout. */
export function claimMessagesFor(lang: Language, kind: 'refund' | 'payout'): RefundMessages {
  return kind === 'payout' ? { ...REFUND_MESSAGES[lang], ...PAYOUT_WORDING[lang] } : REFUND_MESSAGES[lang];
}
