// The `svc` command (bin/svc.js runs this file with tsx). Each subcommand's module is loaded only
// when asked for, so `svc openapi` loads no gRPC and opens no port. Exit codes: 0 done, 1 failed,
// 2 bad usage (flags, config), with the problem named on stderr.
import { pathToFileURL } from 'node:url';
import { BUILD_VERSION } from '../transports/node/build-info.js';
import { processIo, type Io } from './io.js';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE } from './limits.js';
import { TOP_USAGE, UsageError, VERSION_USAGE } from './usage.js';

/** LONG_RUNNING commands end the process when they return, whatever handles are still open. */
const LONG_RUNNING = new Set(['node', 'cluster']);
const COMMANDS = new Set([
  'node',
  'cluster',
  'status',
  'members',
  'keys',
  'openapi',
  'certs',
  'manifests',
  'backup',
  'restore',
  'debug',
]);

export async function runSvc(argv: string[], io: Io = processIo): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'node':
        return await (await import('./node-command.js')).runNodeCommand(rest, io);
      case 'cluster':
        return await (await import('./cluster-command.js')).runClusterCommand(rest, io);
      case 'status':
        return await (await import('./status-command.js')).runStatusCommand(rest, io);
      case 'members':
        return await (await import('./members-command.js')).runMembersCommand(rest, io);
      case 'debug':
        return await (await import('./debug-command.js')).runDebugCommand(rest, io);
      case 'keys':
        return await (await import('./keys-command.js')).runKeysCommand(rest, io);
      case 'backup':
        return await (await import('./backup/backup-command.js')).runBackupCommand(rest, io);
      case 'restore':
        return await (await import('./backup/restore-command.js')).runRestoreCommand(rest, io);
      case 'openapi':
        return (await import('./openapi-command.js')).runOpenApiCommand(rest, io);
      case 'manifests':
        return await (await import('./manifests/manifests-command.js')).runManifestsCommand(rest, io);
      case 'version':
      case '--version':
        if (rest.length === 1 && rest[0] === '--help') {
          io.out.write(`${VERSION_USAGE}\n`);
          return EXIT_OK;
        }
        // The same version the nodes report as build_version (package.json's, which a release bumps).
        if (rest.length > 0) throw new UsageError(`${command} takes no arguments`);
        io.out.write(`svc ${BUILD_VERSION || 'version-unknown'}\n`);
        return EXIT_OK;
      case 'certs': {
        const { runCertsCli } = await import('./certs/certs-command.js');
        return await runCertsCli(rest, io.out, io.err);
      }
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        (command === undefined ? io.err : io.out).write(`${TOP_USAGE}\n`);
        return command === undefined ? EXIT_USAGE : EXIT_OK;
      default:
        throw new UsageError(`unknown command ${JSON.stringify(command)}`);
    }
  } catch (err) {
    if (err instanceof UsageError) {
      const help = command !== undefined && COMMANDS.has(command) ? `svc ${command} --help` : 'svc --help';
      io.err.write(`svc${command === undefined ? '' : ` ${command}`}: ${err.message}\n(${help} shows the usage)\n`);
      return EXIT_USAGE;
    }
    io.err.write(
      `svc${command === undefined ? '' : ` ${command}`}: ${err instanceof Error ? err.message : String(err)}\n`,
    );
    return EXIT_FAILED;
  }
}

/** EXIT_GRACE_MS lets a short command's sockets close; a handle left open past it does not keep the process alive. */
const EXIT_GRACE_MS = 2_000;

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await runMain(process.argv.slice(2));
}

export async function runMain(argv: string[]): Promise<void> {
  // A reader that went away (`svc openapi | head`) is not an error of ours.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(EXIT_OK);
    throw err;
  });
  const code = await runSvc(argv);
  if (LONG_RUNNING.has(argv[0] ?? '')) process.exit(code);
  process.exitCode = code;
  setTimeout(() => process.exit(code), EXIT_GRACE_MS).unref();
}
