import { createParamDecorator, HttpException, HttpStatus, Injectable, UnauthorizedException, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AccountsService, type Principal } from './accounts.service.js';
import { RateLimiter, type RateDecision } from './rate-limiter.js';

type AuthedRequest = FastifyRequest & { principal?: Principal };

/** Bearer API key authentication, the per-address throttle of failed ones, and the per-key rate limit. */
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
    if (!principal) {
      // Counted per client address, and only failures: a valid key is never refused because
      // its address also sent wrong ones (a NAT neighbour, an attacker sharing the egress).
      const failures = await this.rateLimiter.authFailure(request.ip);
      if (!failures.allowed) throw tooManyRequests(http.getResponse<FastifyReply>(), failures, 'Too many failed authentications from this address');
      throw new UnauthorizedException('Unknown or revoked API key');
    }
    const decision = await this.rateLimiter.check(principal.apiKeyId);
    if (!decision.allowed) throw tooManyRequests(http.getResponse<FastifyReply>(), decision, 'Too many requests');
    request.principal = principal;
    return true;
  }
}

function tooManyRequests(reply: FastifyReply, decision: RateDecision, title: string): HttpException {
  reply.header('retry-after', String(decision.retryAfterSeconds));
  return new HttpException({ code: 'rate_limited', title, detail: `Retry after ${decision.retryAfterSeconds} s` }, HttpStatus.TOO_MANY_REQUESTS);
}

/** The authenticated account's id; every query a controller makes is scoped by it. */
export const AccountId = createParamDecorator((_: unknown, context: ExecutionContext): string => {
  const principal = context.switchToHttp().getRequest<AuthedRequest>().principal;
  if (!principal) throw new UnauthorizedException();
  return principal.accountId;
});
