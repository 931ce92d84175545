// The /cluster part of the OpenAPI document: document.ts calls clusterOpenApi with its own helpers and spreads
// the result into its paths and schemas, as it does the albums'.
import type { OpenApiHelpers, Schema } from '../albums/openapi-helpers.js';
import { clusterStreamsMax } from './limits.js';

export const clusterTag = {
  name: 'cluster',
  description: `The cluster as the answering node sees it, for **admin keys** (a developer key: 403 \`FORBIDDEN\`).

\`GET /cluster\` is the members now: role, term, commit and applied positions, lag, readiness, build version. The node's
own figures and the leader are its engine's; the other members' are read from their own \`GET /status\` (at most
\`pollIntervalMs\` old while a stream is open; an unreachable member says why). A browser's navigation to
\`/cluster\` (Accept: text/html) gets a page that holds no data: it asks for an admin key and follows the stream.

\`GET /cluster/events\` is the same live (SSE): \`cluster.view\` (a ClusterView) whenever the view changes, and
\`cluster.event\` (a ClusterEvent) for each election, role, readiness and membership change the node saw. The node keeps
its last \`eventCountMax\` events in memory; a new stream starts with them and the current view. Ids are
\`<epoch>-<seq>\`: \`Last-Event-ID\` resumes after the last entry seen. At most ${clusterStreamsMax} streams per node
(429 \`RATE_LIMITED\` beyond).`,
};

const count = { type: 'integer', minimum: 0 };
const nullableCount = { type: ['integer', 'null'], minimum: 0 };

export function clusterOpenApi(h: OpenApiHelpers): { paths: Record<string, Schema>; schemas: Record<string, Schema> } {
  return { paths: clusterPaths(h), schemas: clusterSchemas(h) };
}

/** clusterPaths: GET /cluster and GET /cluster/events. */
function clusterPaths(h: OpenApiHelpers): Record<string, Schema> {
  return {
    '/cluster': {
      get: h.authenticated({
        operationId: 'getCluster',
        tags: ['cluster'],
        summary: "The cluster's members and their figures, as this node sees them now",
        responses: {
          200: {
            description: 'the view; with Accept: text/html and no key, the page that shows it live',
            content: { ...h.json(h.ref('ClusterView')), 'text/html': { schema: { type: 'string' } } },
          },
          404: h.errorResponse('NOT_FOUND: this API is not served by a cluster node'),
        },
      }),
    },
    '/cluster/events': {
      get: h.authenticated({
        operationId: 'streamClusterEvents',
        tags: ['cluster'],
        summary: "Server-Sent Events of this node's view of the cluster and its recent events",
        parameters: [
          { name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'string', maxLength: 64 } },
        ],
        responses: {
          200: { description: 'the event stream', content: { 'text/event-stream': { schema: { type: 'string' } } } },
          404: h.errorResponse('NOT_FOUND: this API is not served by a cluster node'),
        },
      }),
    },
  };
}

/** clusterSchemas: ClusterView, ClusterMember and ClusterEvent. */
function clusterSchemas(h: OpenApiHelpers): Record<string, Schema> {
  return {
    ClusterMember: {
      type: 'object',
      additionalProperties: false,
      required: [
        'id',
        'name',
        'membership',
        'grpcAddr',
        'httpAddr',
        'self',
        'leader',
        'reachable',
        'error',
        'figuresAtMs',
        'role',
        'term',
        'leaderId',
        'lastSeq',
        'commitSeq',
        'appliedSeq',
        'durableSeq',
        'snapshotSeq',
        'ready',
        'healthy',
        'buildVersion',
        'buildVersionFrom',
        'applyLag',
        'matchLag',
      ],
      properties: {
        id: count,
        name: { type: 'string' },
        membership: { type: 'string', description: 'voter or learner' },
        grpcAddr: { type: 'string' },
        httpAddr: { type: 'string' },
        self: { type: 'boolean', description: 'the answering node' },
        leader: { type: 'boolean', description: "the leader the answering node's engine knows" },
        reachable: { type: 'boolean' },
        error: { type: ['string', 'null'], description: 'why its figures are missing' },
        figuresAtMs: { type: ['integer', 'null'], description: 'when its figures were read (ms since the epoch)' },
        role: { type: ['string', 'null'], description: 'leader, follower, candidate, …; null when unknown' },
        term: nullableCount,
        leaderId: nullableCount,
        lastSeq: nullableCount,
        commitSeq: nullableCount,
        appliedSeq: nullableCount,
        durableSeq: nullableCount,
        snapshotSeq: nullableCount,
        ready: { type: ['boolean', 'null'], description: 'its readiness latch' },
        healthy: { type: ['boolean', 'null'] },
        buildVersion: { type: ['string', 'null'] },
        buildVersionFrom: {
          enum: ['status', 'heartbeat', null],
          description: "status: its own /status; heartbeat: what the answering node's engine saw in heartbeats",
        },
        applyLag: { ...nullableCount, description: 'the highest commit position known less its applied position' },
        matchLag: { ...nullableCount, description: 'answered by a leader: its last position less the matched one' },
      },
    },
    ClusterView: {
      type: 'object',
      additionalProperties: false,
      required: [
        'answeredBy',
        'atMs',
        'term',
        'leader',
        'membershipVersion',
        'commitSeq',
        'members',
        'pollIntervalMs',
        'eventCountMax',
      ],
      properties: {
        answeredBy: {
          type: 'object',
          additionalProperties: false,
          required: ['id', 'name'],
          properties: { id: count, name: { type: 'string' } },
        },
        atMs: count,
        term: count,
        leader: {
          type: ['object', 'null'],
          additionalProperties: false,
          required: ['id', 'name'],
          properties: { id: count, name: { type: 'string' } },
        },
        membershipVersion: count,
        commitSeq: count,
        members: { type: 'array', items: h.ref('ClusterMember') },
        pollIntervalMs: count,
        eventCountMax: count,
      },
    },
    ClusterEvent: {
      type: 'object',
      description: 'one entry of the data of a cluster.event',
      required: ['seq', 'atMs', 'kind', 'term', 'summary'],
      properties: {
        seq: count,
        atMs: count,
        kind: { enum: ['election', 'role', 'readiness', 'membership'] },
        term: count,
        summary: { type: 'string' },
        leaderId: count,
        leaderName: { type: 'string' },
        role: { type: 'string' },
        ready: { type: 'boolean' },
        reason: { type: 'string' },
        membershipVersion: count,
        members: {
          type: 'array',
          items: {
            type: 'object',
            required: ['id', 'name', 'role'],
            properties: { id: count, name: { type: 'string' }, role: { type: 'string' } },
          },
        },
      },
    },
  };
}
