/**
 * The form caller text is compared in where case does not count (docs/identifiers.md,
 * "Equivalent text"): Unicode NFC first, so a composed "é" and "e" + U+0301 (what macOS and
 * some CRMs send) are one text, then lower case. Only keys are made with it: the text itself is
 * stored and answered exactly as sent.
 */
export const caselessKey = (text: string): string => text.normalize('NFC').toLowerCase();
