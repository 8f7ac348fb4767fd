/**
 * Personal data kept out of texts that leave the service's stores unsealed: log lines and bus
 * headers (docs/personal-data.md, What the logs hold). A log line or a Kafka header cannot be erased.
 */

/** Email addresses in a text (a provider's error, a handler's error) replaced by `[Redacted]`. */
export const withoutAddresses = (text: string): string => text.replace(/[^\s<>()[\]"',;:@]+@[^\s<>()[\]"',;:@]+/g, '[Redacted]');
