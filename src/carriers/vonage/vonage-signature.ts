import { createHash } from 'node:crypto';
import { errors, jwtVerify, SignJWT } from 'jose';

/**
 * Vonage's signed webhooks: `Authorization: Bearer <JWT>`, HS256 with the account's signature
 * secret, claims `iat`, `jti` (a nonce: unique per token) and `payload_hash` (hex SHA-256 of the
 * body, binding the token to these bytes). The JWT itself is checked by `jose`, never by hand.
 */

/** The one algorithm Vonage signs with; a token naming any other (or `none`) is refused. */
const ALGORITHM = 'HS256';
const BEARER = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*)$/;

export const SIGNATURE_REFUSED = 'Authorization bearer token missing or invalid';

/** Hex SHA-256 of the body bytes, as the `payload_hash` claim carries it. */
export function vonagePayloadHash(body: string | Buffer): string {
  return createHash('sha256').update(body).digest('hex');
}

export interface VonageTokenClaims {
  jti: string;
  /** Unix seconds; now when omitted. */
  iat?: number;
}

/** A token as Vonage would send it for `body` (for the sandbox and tests). */
export function signVonageWebhook(secret: string, body: string | Buffer, claims: VonageTokenClaims): Promise<string> {
  return new SignJWT({ payload_hash: vonagePayloadHash(body), application_id: 'sandbox-application' })
    .setProtectedHeader({ alg: ALGORITHM, typ: 'JWT' })
    .setIssuer('Vonage')
    .setJti(claims.jti)
    .setIssuedAt(claims.iat ?? Math.floor(Date.now() / 1000))
    .sign(new TextEncoder().encode(secret));
}

export interface VerifiedVonageToken {
  /** The token's nonce: the same token replayed carries the same one. */
  jti: string;
}

/**
 * Why a request is refused, or its verified nonce: the HS256 signature (jose, `alg` pinned), then
 * `iat` within the tolerance in both directions, then `payload_hash` equal to these body bytes.
 */
export async function verifyVonageWebhook(
  secret: string,
  authorization: string | undefined,
  rawBody: Buffer,
  toleranceSeconds: number,
  nowSeconds = Math.floor(Date.now() / 1000),
): Promise<{ problem: string } | VerifiedVonageToken> {
  const token = BEARER.exec(authorization ?? '')?.[1];
  if (!token) return { problem: 'Authorization must be a Bearer JWT' };
  let payload;
  try {
    ({ payload } = await jwtVerify(token, new TextEncoder().encode(secret), {
      algorithms: [ALGORITHM],
      requiredClaims: ['iat', 'jti', 'payload_hash'],
      currentDate: new Date(nowSeconds * 1000),
    }));
  } catch (err) {
    if (err instanceof errors.JOSEError) return { problem: SIGNATURE_REFUSED };
    throw err;
  }
  const { iat, jti, payload_hash: payloadHash } = payload;
  if (typeof iat !== 'number' || Math.abs(nowSeconds - iat) > toleranceSeconds) return { problem: 'token iat is outside the tolerance' };
  if (typeof jti !== 'string' || jti.length === 0 || jti.length > 255) return { problem: SIGNATURE_REFUSED };
  if (payloadHash !== vonagePayloadHash(rawBody)) return { problem: 'token payload_hash does not match the body' };
  return { jti };
}
