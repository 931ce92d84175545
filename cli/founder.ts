// parseFounder reads one --founder value (svc node, svc restore): NAME,GRPC_ADDR,HTTP_BASE.
import type { BootstrapMember } from './node/config.js';
import { UsageError } from './usage.js';

export function parseFounder(text: string): BootstrapMember {
  const parts = text.split(',');
  if (parts.length !== 3 || parts.some((p) => p.trim() === '')) {
    throw new UsageError(
      `--founder takes NAME,GRPC_HOST:PORT,HTTP_URL (e.g. n1,127.0.0.1:7001,http://127.0.0.1:8001), got ${JSON.stringify(text)}`,
    );
  }
  const [name, grpcAddr, httpAddr] = parts.map((p) => p.trim()) as [string, string, string];
  return { name, grpcAddr, httpAddr };
}
