import type { LoggerService } from '@nestjs/common';
import { pino, type Logger } from 'pino';

/**
 * JSON logs on stderr (stdout stays free for CLI output). Headers that carry secrets are
 * redacted wherever a request object is logged.
 */
export function createPino(level: string): Logger {
  return pino(
    {
      level,
      base: { pid: process.pid },
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers["telnyx-signature-ed25519"]',
          'req.headers["x-twilio-signature"]',
          'req.headers.cookie',
        ],
        censor: '[redacted]',
      },
    },
    pino.destination({ fd: 2, sync: false }),
  );
}

/** Nest's logger on top of pino. */
export class PinoNestLogger implements LoggerService {
  constructor(private readonly pino: Logger) {}
  log(message: unknown, context?: string) {
    this.pino.info({ context }, String(message));
  }
  error(message: unknown, trace?: string, context?: string) {
    this.pino.error({ context, trace }, String(message));
  }
  warn(message: unknown, context?: string) {
    this.pino.warn({ context }, String(message));
  }
  debug(message: unknown, context?: string) {
    this.pino.debug({ context }, String(message));
  }
  verbose(message: unknown, context?: string) {
    this.pino.trace({ context }, String(message));
  }
}
