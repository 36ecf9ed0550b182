/**
 * A streaming reader of the pcap stream `tcpdump -i nflog:<group> -w -` writes: pcap records
 * of link type NFLOG (239), each an `nfgenmsg` header and the netlink attributes the kernel's
 * `nfnetlink_log` sent for one logged packet (libpcap passes them through unchanged).
 *
 * Invariants: chunks may split anything anywhere (the parser keeps the unread tail); a record
 * of another link type, or an attribute list that runs past its record, is skipped whole —
 * never read past. Only the attributes the drop log needs are kept: the prefix and the copied
 * packet bytes (and the interfaces).
 */

/** libpcap `LINKTYPE_NFLOG`. */
export const LINKTYPE_NFLOG = 239;
/** `enum nfulnl_attr_type` (linux/netfilter/nfnetlink_log.h). */
const NFULA_IFINDEX_INDEV = 4;
const NFULA_IFINDEX_OUTDEV = 5;
const NFULA_PAYLOAD = 9;
const NFULA_PREFIX = 10;

export interface NflogRecord {
  /** Capture time, ms since the epoch. */
  readonly timeMs: number;
  /** `AF_INET` (2) or `AF_INET6` (10). */
  readonly family: number;
  readonly group: number;
  readonly prefix: string;
  /** The packet from its network header on (as much as `--nflog-size` copied). */
  readonly payload: Buffer;
  readonly inIfindex?: number;
  readonly outIfindex?: number;
}

export class NflogPcapParser {
  #buf: Buffer = Buffer.alloc(0);
  #little: boolean | undefined;
  #nanos = false;
  #linktype = -1;

  /** Feeds bytes; returns the records completed by them. Throws on a stream that is not pcap. */
  push(chunk: Buffer): NflogRecord[] {
    this.#buf = this.#buf.length === 0 ? chunk : Buffer.concat([this.#buf, chunk]);
    const out: NflogRecord[] = [];
    let off = 0;
    if (this.#little === undefined) {
      if (this.#buf.length < 24) return out;
      const magic = this.#buf.readUInt32LE(0);
      if (magic === 0xa1b2c3d4 || magic === 0xa1b23c4d) this.#little = true;
      else if (this.#buf.readUInt32BE(0) === 0xa1b2c3d4 || this.#buf.readUInt32BE(0) === 0xa1b23c4d) this.#little = false;
      else throw new Error(`not a pcap stream (magic 0x${magic.toString(16)})`);
      this.#nanos = (this.#little ? magic : this.#buf.readUInt32BE(0)) === 0xa1b23c4d;
      this.#linktype = this.#u32(20) & 0x0fffffff;
      off = 24;
    }
    while (this.#buf.length - off >= 16) {
      const sec = this.#u32(off);
      const frac = this.#u32(off + 4);
      const incl = this.#u32(off + 8);
      if (this.#buf.length - off - 16 < incl) break;
      const data = this.#buf.subarray(off + 16, off + 16 + incl);
      off += 16 + incl;
      if (this.#linktype !== LINKTYPE_NFLOG) continue;
      const rec = parseNflog(data, sec * 1000 + (this.#nanos ? frac / 1e6 : frac / 1e3));
      if (rec !== undefined) out.push(rec);
    }
    this.#buf = this.#buf.subarray(off);
    return out;
  }

  #u32(at: number): number {
    return this.#little === true ? this.#buf.readUInt32LE(at) : this.#buf.readUInt32BE(at);
  }
}

/**
 * One NFLOG pcap record: `nfgenmsg` (family, version, resource id in network order), then
 * TLVs whose length and type are in host order (little-endian here, as libpcap writes them on
 * x86 and arm64), each padded to 4 bytes.
 */
function parseNflog(data: Buffer, timeMs: number): NflogRecord | undefined {
  if (data.length < 4) return undefined;
  const family = data[0]!;
  const group = data.readUInt16BE(2);
  let prefix: string | undefined;
  let payload: Buffer | undefined;
  let inIfindex: number | undefined;
  let outIfindex: number | undefined;
  let off = 4;
  while (off + 4 <= data.length) {
    const len = data.readUInt16LE(off);
    const type = data.readUInt16LE(off + 2) & 0x7fff;
    if (len < 4 || off + len > data.length) return undefined;
    const value = data.subarray(off + 4, off + len);
    if (type === NFULA_PREFIX) {
      const nul = value.indexOf(0);
      prefix = value.subarray(0, nul < 0 ? value.length : nul).toString('latin1');
    } else if (type === NFULA_PAYLOAD) payload = value;
    else if (type === NFULA_IFINDEX_INDEV && value.length >= 4) inIfindex = value.readUInt32BE(0);
    else if (type === NFULA_IFINDEX_OUTDEV && value.length >= 4) outIfindex = value.readUInt32BE(0);
    off += (len + 3) & ~3;
  }
  if (prefix === undefined || payload === undefined) return undefined;
  return { timeMs, family, group, prefix, payload, ...(inIfindex === undefined ? {} : { inIfindex }), ...(outIfindex === undefined ? {} : { outIfindex }) };
}
