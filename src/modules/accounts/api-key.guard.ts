import { createParamDecorator, HttpException, HttpStatus, Injectable, UnauthorizedException, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AccountsService, type Principal } from './accounts.service.js';
import { RateLimiter } from './rate-limiter.js';

type AuthedRequest = FastifyRequest & { principal?: Principal };

/** Bearer API key authentication plus the per-key rate limit. */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly accounts: AccountsService,
    private readonly rateLimiter: RateLimiter,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const request = http.getRequest<AuthedRequest>();
    const match = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? '');
    if (!match) throw new UnauthorizedException('Missing bearer API key');
    const principal = await this.accounts.authenticate(match[1]);
    if (!principal) throw new UnauthorizedException('Unknown or revoked API key');
    const decision = await this.rateLimiter.check(principal.apiKeyId);
    if (!decision.allowed) {
      http.getResponse<FastifyReply>().header('retry-after', String(decision.retryAfterSeconds));
      throw new HttpException({ code: 'rate_limited', title: 'Too many requests', detail: `Retry after ${decision.retryAfterSeconds} s` }, HttpStatus.TOO_MANY_REQUESTS);
    }
    request.principal = principal;
    return true;
  }
}

/** The authenticated account's id; every query a controller makes is scoped by it. */
export const AccountId = createParamDecorator((_: unknown, context: ExecutionContext): string => {
  const principal = context.switchToHttp().getRequest<AuthedRequest>().principal;
  if (!principal) throw new UnauthorizedException();
  return principal.accountId;
});
