// The OpenAPI 3.1 description of the developer API: the single source of truth. Requests are validated
// against it (and responses, in tests), /openapi.json serves it, and printOpenApi() exports it without a
// server for `svc openapi` and SDK generation.
import {
  allowedIpCountMax,
  commandArgCountMax,
  commandArgLengthMax,
  credentialValueLengthMax,
  nameLengthMax,
  pageLimitMax,
  promptLengthMax,
  rateLimitPerSecondDefault,
  runCredentialsMax,
  workspacePathLengthMax,
} from '../limits.js';
import { credentialCategories } from '../credentials/categories.js';
import { injectableEnvNamePattern, reservedEnvNames, secretFileNamePattern } from '../runs/run-credentials.js';
import { albumOpenApi, albumTag } from '../albums/openapi.js';
import { clusterOpenApi, clusterTag } from '../cluster/openapi.js';

type Schema = Record<string, unknown>;

const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: Schema) => ({ 'application/json': { schema } });
const errorResponse = (description: string) => ({ description, content: json(ref('Error')) });
const idParam = { name: 'id', in: 'path', required: true, schema: ref('Id') };
const pageParams = [
  { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: pageLimitMax } },
  { name: 'cursor', in: 'query', required: false, schema: { type: 'string', maxLength: 256 } },
];
const rateLimitHeaders = {
  'RateLimit-Limit': { description: 'Requests allowed per window', schema: { type: 'integer' } },
  'RateLimit-Remaining': { description: 'Requests left in the current window', schema: { type: 'integer' } },
  'RateLimit-Reset': { description: 'Seconds until a request slot frees', schema: { type: 'integer' } },
};
const page = (item: string): Schema => ({
  type: 'object',
  required: ['items', 'next_cursor'],
  additionalProperties: false,
  properties: { items: { type: 'array', items: ref(item) }, next_cursor: { type: ['string', 'null'] } },
});

const storeUnavailable =
  'STORE_UNAVAILABLE: the cluster could not commit or confirm in time (no leader yet, or ' +
  'this node is cut off); nothing was acknowledged, retry. With Retry-After: this node is catching up ' +
  '(restarted, or behind) and refused a list at once without writing anything; retry after it, or at another node';

/**
 * authenticated adds the responses every keyed operation may give. 503 STORE_UNAVAILABLE is among them because
 * authentication itself reads the replicated store; an operation's own 503 codes are kept beside it.
 */
function authenticated(operation: Schema): Schema {
  const responses = operation.responses as Record<string, unknown>;
  const own503 = responses[503] as { description?: string } | undefined;
  const own403 = responses[403] as { description?: string } | undefined;
  const common403 = 'IP_NOT_ALLOWED, or FORBIDDEN when the key lacks the role';
  return {
    ...operation,
    responses: {
      ...responses,
      503: {
        ...errorResponse(own503?.description ? `${own503.description}; or ${storeUnavailable}` : storeUnavailable),
        headers: { 'Retry-After': { schema: { type: 'integer' } } },
      },
      400: errorResponse('VALIDATION_FAILED or MALFORMED_JSON'),
      401: errorResponse('UNAUTHORIZED (missing or invalid key), KEY_REVOKED or KEY_EXPIRED'),
      403: errorResponse(own403?.description ? `${common403}; ${own403.description}` : common403),
      429: {
        description: 'RATE_LIMITED',
        content: json(ref('Error')),
        headers: { 'Retry-After': { schema: { type: 'integer' } }, ...rateLimitHeaders },
      },
      default: errorResponse('Any other failure, with its code'),
    },
  };
}

const publicOperation = (operation: Schema): Schema => ({
  ...operation,
  security: [],
  responses: { ...(operation.responses as object), default: errorResponse('failure') },
});

// Album paths and schemas come from api/albums/openapi.ts, built with the helpers above.
const albums = albumOpenApi({ ref, json, errorResponse, authenticated, publicOperation, idParam, pageParams, page });
// The /cluster paths likewise (api/cluster/openapi.ts).
const cluster = clusterOpenApi({ ref, json, errorResponse, authenticated, publicOperation, idParam, pageParams, page });

const description = `
Developer API: projects and agent command runs, work-queue statistics, infrastructure credentials, API keys, and
album generation (see the albums tag).

**Authentication.** Every operation except \`/health\`, \`/ready\`, \`/docs\` and \`/openapi.json\` needs an API
key in the \`X-API-Key\` header. Keys look like \`svc_\` followed by 43 base64url characters.
Authentication failures:

| code | status | meaning |
|---|---|---|
| \`UNAUTHORIZED\` | 401 | the key is missing or unknown |
| \`KEY_REVOKED\` | 401 | the key was revoked |
| \`KEY_EXPIRED\` | 401 | the key is past its \`expires_at\` |
| \`IP_NOT_ALLOWED\` | 403 | the client address is outside the key's \`allowed_ips\` |
| \`FORBIDDEN\` | 403 | the key's role may not do this (admin-only operation) |
| \`KEY_SCOPE_EXCEEDED\` | 403 | the key tried to create, rotate or revoke a key broader than itself |

**Key scope.** A key's scope is its role (admin above developer), its \`expires_at\` and its \`allowed_ips\`.
A key may create, rotate or revoke only keys within its own scope: a role no higher, an expiry no later (a key
that expires cannot create one that never does), and an allowlist inside its own (a key with an allowlist cannot
create one without). When creating, an omitted \`expires_at\` or \`allowed_ips\` takes the calling key's own.
Who may act on which keys: an admin key on any user's keys; a developer key on its own user's keys only (others
answer 404). A key lies within its own scope, so any key may rotate or revoke itself. Refusals are 403
\`KEY_SCOPE_EXCEEDED\` with \`details\` naming each field that reaches too far.

**Errors.** Every failure is JSON \`{code, message, requestId, details?}\`; \`code\` is stable. Schema failures
are 400 \`VALIDATION_FAILED\` with \`details\`. Every response carries \`X-Request-Id\` (echoed when the request
sent a sane one).

**Cluster.** Every node of the cluster serves this API over the same replicated store: any node answers any
request, a write is acknowledged only once the cluster committed it, and a read on any node sees every write
acknowledged before it began. While the cluster has no leader (an election, a partition), keyed operations answer
503 \`STORE_UNAVAILABLE\`; retry. A node that is catching up (just restarted, or behind the leader) holds no
request for it: it forwards writes to the leader and reads keys there, and answers a list it has not caught up
to within half an election timeout with 503 \`STORE_UNAVAILABLE\` and \`Retry-After\` (nothing was written: retry after it, or at
another node; the SDK does, retryAttemptsMax times). On a node, \`/health\` and \`/ready\` are the node's own: 503 with
\`{status: "unavailable", reason}\` until it converged (\`/health\`) or while no leader is known (\`/ready\`).

**Rate limit.** Requests per second per key, cluster-wide (default ${rateLimitPerSecondDefault}, setting
\`SVC_RATE_LIMIT_RPS\`), counted over a sliding one-second window. Over the limit: 429 \`RATE_LIMITED\` with
\`Retry-After\`, \`RateLimit-Limit\`, \`RateLimit-Remaining\` and \`RateLimit-Reset\`.
`.trim();

export const openApiDocument = {
  openapi: '3.1.0',
  info: { title: 'svc developer API', version: '0.1.0', description },
  servers: [{ url: '/' }],
  security: [{ ApiKeyAuth: [] }],
  tags: [
    { name: 'service' },
    { name: 'keys' },
    { name: 'users' },
    { name: 'credentials' },
    { name: 'projects' },
    { name: 'work' },
    { name: 'runs' },
    albumTag,
    clusterTag,
  ],
  paths: {
    '/health': {
      get: publicOperation({
        operationId: 'getHealth',
        tags: ['service'],
        summary: "Health: the process answers (on a cluster node: the node's readiness latch converged)",
        responses: {
          200: { description: 'healthy', content: json(ref('Status')) },
          503: {
            description: 'a cluster node that has not converged, or is removed, halted, reseeding or stopping',
            content: json(ref('Status')),
          },
        },
      }),
    },
    '/ready': {
      get: publicOperation({
        operationId: 'getReady',
        tags: ['service'],
        summary: 'Readiness: the service can take traffic (on a cluster node: healthy and a leader is known)',
        responses: {
          200: { description: 'ready', content: json(ref('Status')) },
          503: {
            description: "NOT_READY (an Error), or a cluster node's {status, reason}",
            content: json({ oneOf: [ref('Error'), ref('Status')] }),
          },
        },
      }),
    },
    '/openapi.json': {
      get: publicOperation({
        operationId: 'getOpenApi',
        tags: ['service'],
        summary: 'This document',
        responses: { 200: { description: 'the OpenAPI document', content: json({ type: 'object' }) } },
      }),
    },
    '/keys': {
      get: authenticated({
        operationId: 'listKeys',
        tags: ['keys'],
        summary: 'List keys (admins see all, others their own)',
        parameters: pageParams,
        responses: { 200: { description: 'keys', content: json(page('ApiKey')) } },
      }),
      post: authenticated({
        operationId: 'createKey',
        tags: ['keys'],
        summary: 'Create a key; the full key is in this response only',
        description:
          'Admin keys may create keys for any user; developer keys only for their own user. The new ' +
          "key must lie within the calling key's scope (see Key scope above): a role no higher, an expiry no " +
          "later (none only if the caller has none), an allowlist within the caller's (none only if the caller " +
          "has none). An omitted expires_at or allowed_ips takes the calling key's own.",
        requestBody: { required: true, content: json(ref('NewApiKey')) },
        responses: {
          201: { description: 'created', content: json(ref('IssuedApiKey')) },
          403: {
            description:
              "FORBIDDEN for another user's key from a developer key; KEY_SCOPE_EXCEEDED for a key broader than the caller",
          },
        },
      }),
    },
    '/keys/{id}': {
      get: authenticated({
        operationId: 'getKey',
        tags: ['keys'],
        summary: 'Get a key record',
        parameters: [idParam],
        responses: { 200: { description: 'the key', content: json(ref('ApiKey')) } },
      }),
    },
    '/keys/{id}/revoke': {
      post: authenticated({
        operationId: 'revokeKey',
        tags: ['keys'],
        summary: 'Revoke a key (idempotent)',
        parameters: [idParam],
        description:
          "Admin keys may revoke any user's key, developer keys their own user's keys, and only keys " +
          "within the calling key's scope (so any key may revoke itself, and a narrow key cannot revoke a broader " +
          'one).',
        responses: {
          200: { description: 'the revoked key', content: json(ref('ApiKey')) },
          403: { description: 'KEY_SCOPE_EXCEEDED: the key is broader than the caller' },
        },
      }),
    },
    '/keys/{id}/rotate': {
      post: authenticated({
        operationId: 'rotateKey',
        tags: ['keys'],
        summary: 'Issue a replacement with the same settings and revoke this key',
        description:
          "Who may rotate is who may revoke: admin keys any user's key, developer keys their own " +
          "user's keys, and only keys within the calling key's scope, since the replacement has the old key's " +
          'role, expiry and allowlist. Any key may rotate itself. A revoked or expired key cannot be rotated (409).',
        parameters: [idParam],
        responses: {
          201: { description: 'the new key', content: json(ref('IssuedApiKey')) },
          403: { description: 'KEY_SCOPE_EXCEEDED: the key is broader than the caller' },
        },
      }),
    },
    '/users': {
      get: authenticated({
        operationId: 'listUsers',
        tags: ['users'],
        summary: 'List users (admin)',
        parameters: pageParams,
        responses: { 200: { description: 'users', content: json(page('User')) } },
      }),
      post: authenticated({
        operationId: 'createUser',
        tags: ['users'],
        summary: 'Create a user (admin)',
        requestBody: { required: true, content: json(ref('NewUser')) },
        responses: { 201: { description: 'created', content: json(ref('User')) } },
      }),
    },
    '/credentials': {
      get: authenticated({
        operationId: 'listCredentials',
        tags: ['credentials'],
        summary: 'List credentials with values masked',
        parameters: [
          {
            name: 'category',
            in: 'query',
            required: false,
            schema: ref('CategoryText'),
            description: `One of ${credentialCategories.join(', ')}; others answer 422 INVALID_CATEGORY`,
          },
          ...pageParams,
        ],
        responses: {
          200: { description: 'credentials, masked', content: json(page('Credential')) },
          422: errorResponse('INVALID_CATEGORY'),
          503: errorResponse('CREDENTIALS_UNAVAILABLE: the server has no secret key'),
        },
      }),
      post: authenticated({
        operationId: 'createCredential',
        tags: ['credentials'],
        summary: 'Store a credential (admin)',
        requestBody: { required: true, content: json(ref('NewCredential')) },
        responses: {
          201: { description: 'stored; the value is shown masked', content: json(ref('Credential')) },
          409: errorResponse('CONFLICT: a credential with this category and name exists'),
          422: errorResponse('INVALID_CATEGORY'),
          503: errorResponse('CREDENTIALS_UNAVAILABLE'),
        },
      }),
    },
    '/credentials/{id}': {
      patch: authenticated({
        operationId: 'updateCredential',
        tags: ['credentials'],
        summary: 'Replace a credential value (admin)',
        parameters: [idParam],
        requestBody: { required: true, content: json(ref('CredentialUpdate')) },
        responses: {
          200: { description: 'updated', content: json(ref('Credential')) },
          404: errorResponse('NOT_FOUND'),
          503: errorResponse('CREDENTIALS_UNAVAILABLE'),
        },
      }),
      delete: authenticated({
        operationId: 'deleteCredential',
        tags: ['credentials'],
        summary: 'Delete a credential (admin)',
        parameters: [idParam],
        responses: { 204: { description: 'deleted' }, 404: errorResponse('NOT_FOUND') },
      }),
    },
    '/projects': {
      get: authenticated({
        operationId: 'listProjects',
        tags: ['projects'],
        summary: 'List projects',
        parameters: pageParams,
        responses: { 200: { description: 'projects', content: json(page('Project')) } },
      }),
      post: authenticated({
        operationId: 'createProject',
        tags: ['projects'],
        summary: 'Create a project (admin)',
        requestBody: { required: true, content: json(ref('NewProject')) },
        responses: {
          201: { description: 'created', content: json(ref('Project')) },
          422: errorResponse('INVALID_WORKSPACE'),
        },
      }),
    },
    '/projects/{id}': {
      get: authenticated({
        operationId: 'getProject',
        tags: ['projects'],
        summary: 'Get a project',
        parameters: [idParam],
        responses: {
          200: { description: 'the project', content: json(ref('Project')) },
          404: errorResponse('NOT_FOUND'),
        },
      }),
      patch: authenticated({
        operationId: 'updateProject',
        tags: ['projects'],
        summary: 'Change a project (admin)',
        parameters: [idParam],
        requestBody: { required: true, content: json(ref('ProjectUpdate')) },
        responses: {
          200: { description: 'updated', content: json(ref('Project')) },
          404: errorResponse('NOT_FOUND'),
          409: errorResponse('CONFLICT: changed concurrently, retry'),
          422: errorResponse('INVALID_WORKSPACE'),
        },
      }),
      delete: authenticated({
        operationId: 'deleteProject',
        tags: ['projects'],
        summary: 'Delete a project (admin)',
        parameters: [idParam],
        responses: { 204: { description: 'deleted' }, 404: errorResponse('NOT_FOUND') },
      }),
    },
    '/work/stats': {
      get: authenticated({
        operationId: 'getWorkStats',
        tags: ['work'],
        summary: 'Job counts and workers per queue',
        responses: {
          200: { description: 'statistics', content: json(ref('WorkStats')) },
          503: errorResponse('QUEUE_UNAVAILABLE: no Redis is configured or it does not answer'),
        },
      }),
    },
    '/projects/{id}/commands': {
      post: authenticated({
        operationId: 'runCommand',
        tags: ['runs'],
        summary: "Run the project's agent command with a prompt",
        description:
          'Queues a run; the agent runs sandboxed (bubblewrap) in the project workspace with the prompt as ' +
          'its last argument. Follow its progress at streamUrl (SSE).',
        parameters: [idParam],
        requestBody: { required: true, content: json(ref('CommandRequest')) },
        responses: {
          202: { description: 'accepted', content: json(ref('CommandAccepted')) },
          404: errorResponse('NOT_FOUND'),
          503: errorResponse('QUEUE_UNAVAILABLE'),
        },
      }),
    },
    '/runs/{id}': {
      get: authenticated({
        operationId: 'getRun',
        tags: ['runs'],
        summary: 'Status of a run',
        parameters: [idParam],
        responses: { 200: { description: 'the run', content: json(ref('Run')) }, 404: errorResponse('NOT_FOUND') },
      }),
    },
    '/runs/{id}/cancel': {
      post: authenticated({
        operationId: 'cancelRun',
        tags: ['runs'],
        summary: 'Cancel a queued or running run',
        parameters: [idParam],
        responses: {
          202: { description: 'cancellation requested', content: json(ref('Run')) },
          404: errorResponse('NOT_FOUND'),
        },
      }),
    },
    '/runs/{id}/events': {
      get: authenticated({
        operationId: 'streamRunEvents',
        tags: ['runs'],
        summary: 'Server-Sent Events of a run, from the start or after Last-Event-ID',
        description:
          "Events: `queued`, `started` {startedAt, sandbox} (sandbox states the run's uid, network and " +
          'limits, and by what each limit holds on this host; with network, `egress`: what the run may reach and what ' +
          'it is denied, names resolved as it started), `credentials` {injected: [{category, name, as, target}]} ' +
          '(which credentials the run got: names, never values), `output` {stream, text} (credential values masked), ' +
          '`notice` {message, code?} (code: JOB_MISMATCH, PROJECT_MISSING, CREDENTIAL_MISSING, CREDENTIALS_UNAVAILABLE, ' +
          'NETWORK_POLICY_UNAVAILABLE, EGRESS_DENY_UNRESOLVED, NETWORK_SETUP_FAILED, AGENT_STAGE_FAILED, WORKSPACE_MISSING, WORKSPACE_NOT_REACHABLE, INVALID_WORKSPACE, ' +
          'WORKSPACE_QUOTA_EXCEEDED, WORKER_LOST: the worker running it stopped; the run failed and is not run again), then `complete` ' +
          '{status, exitCode, durationMs}, after which the stream ends. Each event has an id; reconnect with ' +
          'Last-Event-ID to resume after it. Quiet periods carry `: keep-alive` comments. A late client gets the ' +
          'whole stream while the run is retained (24 h).',
        parameters: [
          idParam,
          { name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'string', maxLength: 64 } },
        ],
        responses: {
          200: { description: 'the event stream', content: { 'text/event-stream': { schema: { type: 'string' } } } },
          404: errorResponse('NOT_FOUND'),
          503: errorResponse('QUEUE_UNAVAILABLE'),
        },
      }),
    },
    ...albums.paths,
    ...cluster.paths,
  },
  components: {
    securitySchemes: { ApiKeyAuth: { type: 'apiKey', in: 'header', name: 'X-API-Key' } },
    schemas: {
      Id: { type: 'string', pattern: '^[a-z]{3}_[0-9a-z]{9}[0-9a-f]{16}$' },
      Timestamp: { type: 'string', format: 'date-time' },
      Name: { type: 'string', minLength: 1, maxLength: nameLengthMax },
      Status: {
        type: 'object',
        required: ['status'],
        properties: {
          status: { type: 'string' },
          reason: { type: 'string', description: 'why not, on a 503 from a cluster node' },
        },
      },
      Error: {
        type: 'object',
        required: ['code', 'message', 'requestId'],
        properties: {
          code: {
            type: 'string',
            examples: ['UNAUTHORIZED', 'KEY_REVOKED', 'KEY_EXPIRED', 'IP_NOT_ALLOWED', 'KEY_SCOPE_EXCEEDED'],
          },
          message: { type: 'string' },
          requestId: { type: 'string' },
          details: {},
        },
      },
      Role: { type: 'string', enum: ['admin', 'developer'] },
      IpRule: { type: 'string', minLength: 2, maxLength: 64, description: 'an IPv4/IPv6 address or CIDR' },
      ApiKey: {
        type: 'object',
        additionalProperties: false,
        required: [
          'id',
          'name',
          'key_prefix',
          'user_id',
          'role',
          'created_at',
          'expires_at',
          'revoked_at',
          'revoked_by',
          'allowed_ips',
        ],
        properties: {
          id: ref('Id'),
          name: ref('Name'),
          key_prefix: { type: 'string' },
          user_id: ref('Id'),
          role: ref('Role'),
          created_at: ref('Timestamp'),
          expires_at: { oneOf: [ref('Timestamp'), { type: 'null' }] },
          revoked_at: { oneOf: [ref('Timestamp'), { type: 'null' }] },
          revoked_by: { type: ['string', 'null'], description: 'id of the key that revoked this one' },
          allowed_ips: {
            oneOf: [{ type: 'array', items: ref('IpRule') }, { type: 'null' }],
            description: 'null means any address',
          },
        },
      },
      NewApiKey: {
        type: 'object',
        additionalProperties: false,
        required: ['name'],
        properties: {
          name: ref('Name'),
          role: ref('Role'),
          user_id: ref('Id'),
          expires_at: {
            oneOf: [ref('Timestamp'), { type: 'null' }],
            description: "null: never expires; omitted: the calling key's expiry. No later than the calling key's.",
          },
          allowed_ips: {
            oneOf: [{ type: 'array', items: ref('IpRule'), maxItems: allowedIpCountMax }, { type: 'null' }],
            description: "null: any address; omitted: the calling key's allowlist. Within the calling key's allowlist.",
          },
        },
      },
      IssuedApiKey: {
        type: 'object',
        additionalProperties: false,
        required: ['key', 'record'],
        properties: { key: { type: 'string', description: 'the full key, shown only here' }, record: ref('ApiKey') },
      },
      User: {
        type: 'object',
        additionalProperties: false,
        required: ['id', 'name', 'created_at'],
        properties: { id: ref('Id'), name: ref('Name'), created_at: ref('Timestamp') },
      },
      NewUser: {
        type: 'object',
        additionalProperties: false,
        required: ['name'],
        properties: { name: ref('Name') },
      },
      CategoryText: { type: 'string', minLength: 1, maxLength: 64 },
      Credential: {
        type: 'object',
        additionalProperties: false,
        required: ['id', 'category', 'name', 'masked_value', 'created_at', 'updated_at'],
        properties: {
          id: ref('Id'),
          category: { type: 'string', enum: [...credentialCategories] },
          name: ref('Name'),
          masked_value: { type: 'string', description: 'e.g. ab••••••yz; •••• for short values' },
          created_at: ref('Timestamp'),
          updated_at: ref('Timestamp'),
        },
      },
      NewCredential: {
        type: 'object',
        additionalProperties: false,
        required: ['category', 'name', 'value'],
        properties: {
          category: { ...ref('CategoryText'), description: credentialCategories.join(' | ') },
          name: ref('Name'),
          value: { type: 'string', minLength: 1, maxLength: credentialValueLengthMax },
        },
      },
      CredentialUpdate: {
        type: 'object',
        additionalProperties: false,
        required: ['value'],
        properties: { value: { type: 'string', minLength: 1, maxLength: credentialValueLengthMax } },
      },
      Command: {
        type: 'array',
        minItems: 1,
        maxItems: commandArgCountMax,
        items: { type: 'string', maxLength: commandArgLengthMax },
        description: 'argv of the agent; the prompt is appended as the last argument',
      },
      Workspace: {
        type: 'string',
        minLength: 1,
        maxLength: workspacePathLengthMax,
        description: 'absolute path of the project directory',
      },
      ProjectCredential: {
        type: 'object',
        additionalProperties: false,
        required: ['category', 'name', 'as', 'target'],
        description:
          'A stored credential (category and name) that runs of the project get, resolved when each run ' +
          'starts: as an environment variable named `target`, or as the read-only file `/run/secrets/<target>`. ' +
          'Values never appear in the project, the run, its events or the logs; output that contains one is masked. ' +
          'A run whose credential is missing fails with the notice code CREDENTIAL_MISSING.',
        properties: {
          category: { ...ref('CategoryText'), description: credentialCategories.join(' | ') },
          name: ref('Name'),
          as: { type: 'string', enum: ['env', 'file'] },
          target: {
            type: 'string',
            minLength: 1,
            maxLength: 128,
            description: `env: ${injectableEnvNamePattern}, not ${reservedEnvNames.join(', ')} or LD_*; file: ${secretFileNamePattern}`,
          },
        },
      },
      ProjectCredentials: { type: 'array', maxItems: runCredentialsMax, items: ref('ProjectCredential') },
      Project: {
        type: 'object',
        additionalProperties: false,
        required: [
          'id',
          'name',
          'workspace',
          'command',
          'network',
          'credentials',
          'created_by',
          'created_at',
          'updated_at',
        ],
        properties: {
          id: ref('Id'),
          name: ref('Name'),
          workspace: ref('Workspace'),
          command: ref('Command'),
          network: {
            type: 'boolean',
            description:
              'whether agent runs may use the network: egress only (never the host, link-local addresses, ' +
              'the cluster or its Redis); without it a run has loopback only',
          },
          credentials: ref('ProjectCredentials'),
          created_by: ref('Id'),
          created_at: ref('Timestamp'),
          updated_at: ref('Timestamp'),
        },
      },
      NewProject: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'workspace', 'command'],
        properties: {
          name: ref('Name'),
          workspace: ref('Workspace'),
          command: ref('Command'),
          network: { type: 'boolean', default: false },
          credentials: ref('ProjectCredentials'),
        },
      },
      ProjectUpdate: {
        type: 'object',
        additionalProperties: false,
        minProperties: 1,
        properties: {
          name: ref('Name'),
          workspace: ref('Workspace'),
          command: ref('Command'),
          network: { type: 'boolean' },
          credentials: ref('ProjectCredentials'),
        },
      },
      QueueStats: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'waiting', 'active', 'completed', 'failed', 'delayed', 'workers'],
        properties: {
          name: { type: 'string' },
          waiting: { type: 'integer' },
          active: { type: 'integer' },
          completed: { type: 'integer' },
          failed: { type: 'integer' },
          delayed: { type: 'integer' },
          workers: { type: 'integer', description: 'workers connected to this queue' },
        },
      },
      WorkStats: {
        type: 'object',
        additionalProperties: false,
        required: ['queues'],
        properties: { queues: { type: 'array', items: ref('QueueStats') } },
      },
      Prompt: { type: 'string', minLength: 1, maxLength: promptLengthMax },
      CommandRequest: {
        type: 'object',
        additionalProperties: false,
        required: ['prompt'],
        properties: { prompt: ref('Prompt') },
      },
      CommandAccepted: {
        type: 'object',
        additionalProperties: false,
        required: ['runId', 'streamUrl'],
        properties: {
          runId: ref('Id'),
          streamUrl: { type: 'string', description: 'path of the SSE stream, relative to the server URL' },
        },
      },
      Run: {
        type: 'object',
        additionalProperties: false,
        required: [
          'id',
          'project_id',
          'user_id',
          'status',
          'created_at',
          'started_at',
          'finished_at',
          'exit_code',
          'duration_ms',
        ],
        properties: {
          id: ref('Id'),
          project_id: ref('Id'),
          user_id: ref('Id'),
          status: { type: 'string', enum: ['queued', 'running', 'succeeded', 'failed', 'cancelled', 'timed_out'] },
          created_at: ref('Timestamp'),
          started_at: { type: ['string', 'null'] },
          finished_at: { type: ['string', 'null'] },
          exit_code: { type: ['integer', 'null'] },
          duration_ms: { type: ['integer', 'null'] },
        },
      },
      ...albums.schemas,
      ...cluster.schemas,
    },
  },
} as const;

/** printOpenApi returns the document as pretty JSON, without starting anything. */
export function printOpenApi(): string {
  return `${JSON.stringify(openApiDocument, null, 2)}\n`;
}
