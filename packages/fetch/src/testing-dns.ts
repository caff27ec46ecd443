/** A DNS server on loopback UDP for tests: answers A records from a table, or never answers. */
import dgram from 'node:dgram';
import type { AddressInfo } from 'node:net';

export interface TestDnsServer {
  /** `127.0.0.1:port`, for `setDnsServers`. */
  address: string;
  /** Queries received (answered or not). */
  queries: number;
  close(): Promise<void>;
}

const TYPE_A = 1;

/** Where the question section ends: its name's labels, a zero byte, then type and class. */
function questionEnd(query: Buffer): number {
  let at = 12;
  while (at < query.length && query[at] !== 0) at += query[at]! + 1;
  return at + 5;
}

function questionName(query: Buffer): string {
  const labels: string[] = [];
  for (let at = 12; at < query.length && query[at] !== 0; at += query[at]! + 1) labels.push(query.toString('latin1', at + 1, at + 1 + query[at]!));
  return labels.join('.').toLowerCase();
}

/** The answer to `query`: the table's IPv4 address for an A question, no data for other types, NXDOMAIN for unknown names. */
function answer(query: Buffer, table: Record<string, string>): Buffer {
  const end = questionEnd(query);
  const question = query.subarray(12, end);
  const type = query.readUInt16BE(end - 4);
  const address = table[questionName(query)];
  const records = address && type === TYPE_A ? [address] : [];
  const header = Buffer.alloc(12);
  query.copy(header, 0, 0, 2); // id
  header.writeUInt16BE(address ? 0x8180 : 0x8183, 2); // response, recursion desired and available; NOERROR or NXDOMAIN
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(records.length, 6);
  const answers = records.map((ip) => {
    const record = Buffer.alloc(16);
    record.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
    record.writeUInt16BE(TYPE_A, 2);
    record.writeUInt16BE(1, 4); // class IN
    record.writeUInt32BE(60, 6); // TTL
    record.writeUInt16BE(4, 10);
    ip.split('.').forEach((octet, i) => record.writeUInt8(Number(octet), 12 + i));
    return record;
  });
  return Buffer.concat([header, question, ...answers]);
}

/** `table` maps names to IPv4 addresses; `silent` swallows every query. */
export async function startDnsServer(behaviour: { table: Record<string, string> } | 'silent'): Promise<TestDnsServer> {
  const socket = dgram.createSocket('udp4');
  const server: TestDnsServer = {
    address: '',
    queries: 0,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
  socket.on('message', (query, peer) => {
    server.queries++;
    if (behaviour !== 'silent') socket.send(answer(query, behaviour.table), peer.port, peer.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
  server.address = `127.0.0.1:${(socket.address() as AddressInfo).port}`;
  return server;
}
