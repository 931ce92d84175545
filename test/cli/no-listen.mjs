// Preloaded with `node --import` by openapi.test.ts: any attempt to listen on a TCP/IPC server or
// bind a UDP socket ends the process with exit code 99, naming the attempt on stderr.
import dgram from 'node:dgram';
import net from 'node:net';

const refuse = (what) =>
  function refused() {
    process.stderr.write(`NO-LISTEN: ${what} was called\n`);
    process.exit(99);
  };
net.Server.prototype.listen = refuse('net.Server.listen');
dgram.Socket.prototype.bind = refuse('dgram.Socket.bind');
