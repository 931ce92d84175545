// What the Kubernetes backend's tests share: the run settings they run under, a plain request to the stand-in
// API server (as a client that is not @kubernetes/client-node would send it), and the Job of a trivial run in
// its wire form (JSON, as the API server receives it).
import type { KubernetesRunSettings } from '../../api/runs/kubernetes-job-spec.js';
import { runJob } from '../../api/runs/kubernetes-job-spec.js';
import { defaultSandboxLimits } from '../../api/runs/sandbox.js';
import type { KubernetesApiStandIn } from './kubernetes-api-stand-in.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

export const testRunSettings: KubernetesRunSettings = {
  namespace: 'runs',
  image: 'registry.example/svc-agent:1',
  cpuCores: '1',
  runAsUser: 65534,
  runAsGroup: 65534,
  tmpBytesMax: 256 * 1024 * 1024,
  jobTtlSeconds: 600,
};

/**
 * standInRequest sends one request to the stand-in with its bearer token (or `token`). The content type is
 * the caller's, else a JSON patch for PATCH and JSON otherwise.
 */
export async function standInRequest(
  cluster: KubernetesApiStandIn,
  method: string,
  url: string,
  body?: Json,
  contentType?: string,
  token = cluster.token,
): Promise<{ status: number; json: Json }> {
  const response = await fetch(`${cluster.url}${url}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': contentType ?? (method === 'PATCH' ? 'application/json-patch+json' : 'application/json'),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as Json };
}

/** plainJobJson is the Job of a run of `true` in /tmp, as JSON on the wire. */
export const plainJobJson = (runId: string, settings = testRunSettings): Json =>
  JSON.parse(
    JSON.stringify(
      runJob(
        {
          runId,
          prompt: 'p',
          project: { workspace: '/tmp', command: ['true'], network: false },
          limits: defaultSandboxLimits,
          timeoutMs: 60_000,
        },
        settings,
      ),
    ),
  );
