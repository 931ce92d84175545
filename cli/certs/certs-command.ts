// `svc certs` entry: make a cluster CA, a node (peer) certificate or an admin certificate signed by it.
//   tsx cli/certs/certs-command.ts cluster-id
//   tsx cli/certs/certs-command.ts ca    --out DIR [--cn NAME] [--days N] [--force]
//   tsx cli/certs/certs-command.ts node  --out DIR --name NODE --cluster-id ID --peers-service SVC --namespace NS
//                                        [--pod POD]... [--ca-dir DIR] [--cluster-domain D] [--days N] [--force]
//   tsx cli/certs/certs-command.ts admin --out DIR --name NAME --cluster-id ID [--ca-dir DIR] [--days N] [--force]
//   tsx cli/certs/certs-command.ts api   --out DIR [--name NAME] --dns NAME... [--ip IP]... [--ca-dir DIR] [--days N] [--force]
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { CertError, createAdminCert, createApiCert, createClusterCa, createNodeCert, newClusterId } from './certs.js';

export const CERTS_USAGE = `usage:
  svc certs cluster-id
  svc certs ca    --out DIR [--cn NAME] [--days N] [--force]
  svc certs node  --out DIR --name NODE --cluster-id ID --peers-service SVC --namespace NS [--pod POD]...
                  [--ca-dir DIR] [--cluster-domain DOMAIN] [--days N] [--force]
  svc certs admin --out DIR --name NAME --cluster-id ID [--ca-dir DIR] [--days N] [--force]
  svc certs api   --out DIR [--name NAME] --dns NAME... [--ip IP]... [--ca-dir DIR] [--days N] [--force]
  svc certs [COMMAND] --help
cluster-id prints a new cluster id. ca writes ca.crt/ca.key; node a peer certificate (replication and the
internal store: serverAuth+clientAuth, spiffe://svc/ID/peer/NODE); admin an admin certificate (the Admin
service only: clientAuth, spiffe://svc/ID/admin/NAME); api the HTTP API's server certificate (serverAuth, the
names clients reach it by: --dns, repeatable, a leading *. allowed, and --ip; NAME default api), as
<NAME>.crt/<NAME>.key (keys 0600) in DIR.`;

interface Output {
  write(text: string): unknown;
}

/** runCertsCli runs one command and returns the exit code: 0 done, 1 failed, 2 bad usage. */
export async function runCertsCli(
  argv: string[],
  out: Output = process.stdout,
  err: Output = process.stderr,
): Promise<number> {
  const [command, ...rest] = argv;
  let values: Record<string, string | boolean | string[] | undefined>;
  try {
    ({ values } = parseArgs({
      args: rest,
      strict: true,
      allowPositionals: false,
      options: {
        out: { type: 'string' },
        cn: { type: 'string' },
        days: { type: 'string' },
        force: { type: 'boolean' },
        name: { type: 'string' },
        'cluster-id': { type: 'string' },
        'peers-service': { type: 'string' },
        namespace: { type: 'string' },
        pod: { type: 'string', multiple: true },
        'ca-dir': { type: 'string' },
        'cluster-domain': { type: 'string' },
        dns: { type: 'string', multiple: true },
        ip: { type: 'string', multiple: true },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (e) {
    err.write(`${(e as Error).message}\n${CERTS_USAGE}\n`);
    return 2;
  }
  if (values.help === true || command === '--help' || command === '-h' || command === 'help') {
    out.write(`${CERTS_USAGE}\n`);
    return 0;
  }
  const str = (name: string): string | undefined => values[name] as string | undefined;
  const days = str('days') === undefined ? undefined : Number(str('days'));
  const missing = (names: string[]): string[] => names.filter((n) => str(n) === undefined);
  try {
    if (command === 'ca') {
      if (missing(['out']).length > 0) return usage(err, 'ca needs --out');
      const files = await createClusterCa({
        dir: str('out')!,
        commonName: str('cn'),
        validDays: days,
        overwrite: values.force === true,
      });
      out.write(`wrote ${files.certPath} and ${files.keyPath}\n`);
      return 0;
    }
    if (command === 'cluster-id') {
      out.write(`${newClusterId()}\n`);
      return 0;
    }
    if (command === 'admin') {
      const lacking = missing(['out', 'name', 'cluster-id']);
      if (lacking.length > 0) return usage(err, `admin needs ${lacking.map((n) => `--${n}`).join(', ')}`);
      const files = await createAdminCert({
        dir: str('out')!,
        caDir: str('ca-dir'),
        name: str('name')!,
        clusterId: str('cluster-id')!,
        validDays: days,
        overwrite: values.force === true,
      });
      out.write(`wrote ${files.certPath} and ${files.keyPath}\nSANs: ${files.subjectAltNames.join(', ')}\n`);
      return 0;
    }
    if (command === 'api') {
      if (missing(['out']).length > 0) return usage(err, 'api needs --out');
      const dnsNames = (values.dns as string[] | undefined) ?? [];
      const ipAddresses = (values.ip as string[] | undefined) ?? [];
      if (dnsNames.length + ipAddresses.length === 0) return usage(err, 'api needs --dns NAME or --ip IP');
      const files = await createApiCert({
        dir: str('out')!,
        caDir: str('ca-dir'),
        name: str('name') ?? 'api',
        dnsNames,
        ipAddresses,
        validDays: days,
        overwrite: values.force === true,
      });
      out.write(`wrote ${files.certPath} and ${files.keyPath}\nSANs: ${files.subjectAltNames.join(', ')}\n`);
      return 0;
    }
    if (command === 'node') {
      const lacking = missing(['out', 'name', 'cluster-id', 'peers-service', 'namespace']);
      if (lacking.length > 0) return usage(err, `node needs ${lacking.map((n) => `--${n}`).join(', ')}`);
      const files = await createNodeCert({
        dir: str('out')!,
        caDir: str('ca-dir'),
        name: str('name')!,
        clusterId: str('cluster-id')!,
        peersService: str('peers-service')!,
        namespace: str('namespace')!,
        podNames: (values.pod as string[] | undefined) ?? [],
        clusterDomain: str('cluster-domain'),
        validDays: days,
        overwrite: values.force === true,
      });
      out.write(`wrote ${files.certPath} and ${files.keyPath}\nSANs: ${files.subjectAltNames.join(', ')}\n`);
      return 0;
    }
    return usage(err, command === undefined ? 'no command given' : `unknown command ${JSON.stringify(command)}`);
  } catch (e) {
    if (e instanceof CertError) {
      err.write(`svc certs: ${e.message}\n`);
      return 1;
    }
    throw e;
  }
}

function usage(err: Output, problem: string): number {
  err.write(`svc certs: ${problem}\n${CERTS_USAGE}\n`);
  return 2;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await runCertsCli(process.argv.slice(2));
}
