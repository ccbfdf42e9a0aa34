/** The carrier contract checker (docs/carrier-contract.md): the carriers' published documents as the reference. */
export { checkRequest } from './check-request.js';
export { checkResponse } from './check-response.js';
export { checkWebhook } from './check-webhook.js';
export { ContractRecorder } from './contract-recorder.js';
export { ContractDivergenceError, divergenceReport, formatDivergence, type Divergence } from './divergence.js';
export type { ObservedRequest, ObservedResponse } from './exchange.js';
export { apiOf, findOperation } from './operations.js';
export { exampleOf, publishedWebhooks, webhookFor, type PublishedWebhook } from './webhooks.js';
export { expectConformant } from './conforms.js';
