// Throwaway CAs and certificates for TLS tests, made with the openssl CLI in a
// temp dir. Deliberately small and separate from cli/certs/.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { PeerTlsMaterial } from '../../transports/grpc/tls.js';

export interface Issued {
  cert: Buffer;
  key: Buffer;
}

export class ThrowawayPki {
  private readonly dir = mkdtempSync(path.join(tmpdir(), 'svc-grpc-tls-'));
  private serial = 1;

  private openssl(...args: string[]): void {
    execFileSync('openssl', args, { cwd: this.dir, stdio: 'pipe', timeout: 30_000 });
  }

  /** ca makes a self-signed CA named `name`. */
  ca(name: string): Issued {
    this.openssl(
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.crt`,
      '-days',
      '2',
      '-subj',
      `/CN=${name}`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    );
    return this.read(name);
  }

  /** issue signs a certificate for `name` with the CA `caName`, valid for the given subject alternative names. */
  issue(caName: string, name: string, altNames: string[]): Issued {
    writeFileSync(
      path.join(this.dir, `${name}.ext`),
      [
        'basicConstraints=CA:FALSE',
        'keyUsage=critical,digitalSignature,keyAgreement',
        'extendedKeyUsage=serverAuth,clientAuth',
        `subjectAltName=${altNames.join(',')}`,
      ].join('\n'),
    );
    this.openssl(
      'req',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
      '-subj',
      `/CN=${name}`,
    );
    this.openssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      `${caName}.crt`,
      '-CAkey',
      `${caName}.key`,
      '-set_serial',
      String(this.serial++),
      '-out',
      `${name}.crt`,
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
    );
    return this.read(name);
  }

  material(caName: string, issued: Issued): PeerTlsMaterial {
    return { ca: readFileSync(path.join(this.dir, `${caName}.crt`)), cert: issued.cert, key: issued.key };
  }

  dispose(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }

  private read(name: string): Issued {
    return {
      cert: readFileSync(path.join(this.dir, `${name}.crt`)),
      key: readFileSync(path.join(this.dir, `${name}.key`)),
    };
  }
}
