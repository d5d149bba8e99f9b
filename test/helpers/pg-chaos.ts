import type { ConnectionTap, CutKind } from './processes';

/**
 * Cuts Postgres connections at chosen points of the wire protocol, for a proxy's tap
 * (processes.ts startTcpProxy → tap), drawing from a seeded RNG while `enabled`:
 *
 * - `setup`: a share of new connections is cut while being opened: on the start-up message, on the
 *   server's greeting, on the driver's first catalog query (postgres.js's array types), or on its answer;
 * - `query`: any later statement may be cut, before it reaches the server or on its answer (the
 *   server ran it, the client never hears it: a commit whose outcome the client cannot know);
 * - `transaction`: the same, counted apart, for a statement sent inside a transaction (the server's
 *   last ReadyForQuery said `T`);
 *
 * each by TCP RST or FIN. What was cut, and where, is counted, so a test can check that each point
 * was met. The draws follow the traffic, so a seed repeats the fates only as far as timing allows.
 */
export type CutPoint = 'setup' | 'query' | 'transaction';

export interface ChaosOptions {
  /** Share of new connections cut while being opened. */
  setUpShare: number;
  /** Chance that a chunk of statements the client sends is cut (on its way, or on its answer). */
  perStatement: number;
  /** The same inside a transaction (transactions are fewer than statements: met more often here). */
  perStatementInTransaction: number;
}

export interface ChaosCounts {
  connections: number;
  cuts: Record<CutPoint, number>;
  kinds: Record<CutKind, number>;
  /** Cuts on the server's answer (the statement reached the server), of all points. */
  onAnswer: number;
}

export interface PostgresChaos {
  tap(connection: number): ConnectionTap;
  counts: ChaosCounts;
  /** Off (the start): nothing is cut. */
  enabled: boolean;
}

/** mulberry32: a small seeded generator, so a failing run can be repeated with its seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Follows one direction of the protocol message by message (type byte, 4-byte length that counts
 * itself, body), across chunk boundaries; the client's first message (start-up) has no type byte.
 * Calls `onMessage` with each message's type and the first byte of its body (ReadyForQuery's
 * transaction status: I idle, T in a transaction, E in a failed one).
 */
class MessageReader {
  private header: number[] = [];
  private remaining = 0;
  private type = 0;
  private wantFirstByte = false;

  constructor(
    private untypedFirst: boolean,
    private onMessage: (type: number, firstByte: number | null) => void,
  ) {}

  push(chunk: Buffer): void {
    let i = 0;
    while (i < chunk.length) {
      if (this.remaining > 0) {
        if (this.wantFirstByte) {
          this.wantFirstByte = false;
          this.onMessage(this.type, chunk[i]);
        }
        const take = Math.min(this.remaining, chunk.length - i);
        this.remaining -= take;
        i += take;
        continue;
      }
      this.header.push(chunk[i++]);
      const headerLength = this.untypedFirst ? 4 : 5;
      if (this.header.length < headerLength) continue;
      const h = Buffer.from(this.header);
      this.header = [];
      this.type = this.untypedFirst ? 0 : h[0];
      const length = h.readUInt32BE(headerLength - 4);
      this.untypedFirst = false;
      this.remaining = length - 4;
      if (this.remaining > 0) this.wantFirstByte = true;
      else this.onMessage(this.type, null);
    }
  }
}

const Z = 'Z'.charCodeAt(0);
const T = 'T'.charCodeAt(0);

export function postgresChaos(random: () => number, options: ChaosOptions): PostgresChaos {
  const counts: ChaosCounts = { connections: 0, cuts: { setup: 0, query: 0, transaction: 0 }, kinds: { rst: 0, fin: 0 }, onAnswer: 0 };
  const drawKind = (): CutKind => (random() < 0.5 ? 'rst' : 'fin');
  const chaos: PostgresChaos = {
    counts,
    enabled: false,
    tap() {
      counts.connections++;
      // Where a connection is cut while being opened: 0 its start-up message, 1 the server's
      // greeting, 2 the driver's first query, 3 that query's answer; -1 not.
      const setUpCut = chaos.enabled && random() < options.setUpShare ? Math.floor(random() * 4) : -1;
      let readyCount = 0; // ReadyForQuery messages seen from the server
      let inTransaction = false;
      let clientChunks = 0;
      let cutDone = false;
      /** A statement on its way whose answer is to be cut. */
      let armed: { point: CutPoint; kind: CutKind } | null = null;
      const serverReader = new MessageReader(false, (type, status) => {
        if (type !== Z) return;
        readyCount++;
        inTransaction = status === T;
      });
      const cut = (point: CutPoint, kind: CutKind, onAnswer: boolean): CutKind => {
        cutDone = true;
        counts.cuts[point]++;
        counts.kinds[kind]++;
        if (onAnswer) counts.onAnswer++;
        return kind;
      };
      return {
        fromClient() {
          clientChunks++;
          if (cutDone || armed || !chaos.enabled) return null;
          // Set-up ends with the answer of the driver's first query (the second ReadyForQuery).
          if (readyCount < 2) {
            if (setUpCut === 0 && clientChunks === 1) return cut('setup', drawKind(), false);
            if (setUpCut === 2 && readyCount === 1) return cut('setup', drawKind(), false);
            if (setUpCut === 3 && readyCount === 1) armed = { point: 'setup', kind: drawKind() };
            return null;
          }
          if (random() >= (inTransaction ? options.perStatementInTransaction : options.perStatement)) return null;
          const point = inTransaction ? 'transaction' : 'query';
          if (random() < 0.5) {
            armed = { point, kind: drawKind() };
            return null;
          }
          return cut(point, drawKind(), false);
        },
        fromServer(chunk) {
          if (!cutDone && chaos.enabled) {
            if (setUpCut === 1 && readyCount === 0) return cut('setup', drawKind(), true);
            if (armed) return cut(armed.point, armed.kind, true);
          }
          serverReader.push(chunk);
          return null;
        },
      };
    },
  };
  return chaos;
}
