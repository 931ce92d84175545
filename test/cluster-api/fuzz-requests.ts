// The cluster fuzz property's requests: test/api/fuzz-requests.ts's, over every route a node serves (the
// store node's /status and /metrics, the API's, event streams included).
import { requestPathArbitrary } from '../api/fuzz-requests.js';

export {
  RAW_REQUEST_TIMEOUT_MS,
  bodyArbitrary,
  contentTypeArbitrary,
  extraHeadersArbitrary,
  methodArbitrary,
  printable,
  rawRequest,
  type RawResponse,
} from '../api/fuzz-requests.js';

const knownPaths = [
  '/health',
  '/ready',
  '/status',
  '/metrics',
  '/docs',
  '/openapi.json',
  '/keys',
  '/users',
  '/credentials',
  '/projects',
  '/work/stats',
  '/keys/{id}',
  '/keys/{id}/revoke',
  '/keys/{id}/rotate',
  '/credentials/{id}',
  '/projects/{id}',
  '/projects/{id}/commands',
  '/runs/{id}',
  '/runs/{id}/cancel',
  '/runs/{id}/events',
  '/albums',
  '/albums/{id}',
  '/albums/{id}/anchor',
  '/albums/{id}/shots',
  '/albums/{id}/shots/{id}',
  '/albums/{id}/images/{id}',
  '/events',
];

export const pathArbitrary = requestPathArbitrary(knownPaths);
