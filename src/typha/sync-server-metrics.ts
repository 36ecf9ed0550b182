/**
 * The sync server's metrics: Typha's quantities (typha.md §3, §2.5, §4.3, §7) as
 * `tessera_typha_<Typha's name>`, registered once per registry (`getOrCreate`) so several
 * servers in one test process share the families. Durations are in seconds, as Typha's.
 *
 * The breadcrumb metrics (`_breadcrumb_block`, `_breadcrumb_non_block`,
 * `_next_breadcrumb_latency_secs`, `_breadcrumb_seq_number`, `_breadcrumb_size`) and the
 * cache's (`_cache_size`, `_updates_total`, `_updates_skipped`) belong to the snapshot cache,
 * where Typha counts them.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

import { getOrCreate } from '../runtime/metrics.ts';

const LATENCY_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 120, 300];

export class SyncServerMetrics {
  readonly connectionsAccepted: Counter;
  readonly connectionsRefused: Counter;
  readonly connectionsActive: Gauge;
  readonly connectionsStreaming: Gauge;
  readonly connectionsDropped: Counter;
  readonly connectionsGraceUsed: Counter;
  readonly connectionsClosed: Counter<'reason'>;
  readonly clientLatencySecs: Histogram;
  readonly clientWriteLatencySecs: Histogram;
  readonly clientSnapshotSendSecs: Histogram;
  readonly kvsPerMsg: Histogram;
  readonly pingLatency: Histogram;
  readonly snapshotsGenerated: Counter;
  readonly snapshotsReused: Counter;
  readonly snapshotRawBytes: Gauge;
  readonly snapshotCompressedBytes: Gauge<'compression'>;

  constructor(registry: Registry) {
    const registers = [registry];
    const counter = (name: string, help: string): Counter => getOrCreate(registry, name, () => new Counter({ name, help, registers }));
    const gauge = (name: string, help: string): Gauge => getOrCreate(registry, name, () => new Gauge({ name, help, registers }));
    const histogram = (name: string, help: string, buckets = LATENCY_BUCKETS): Histogram =>
      getOrCreate(registry, name, () => new Histogram({ name, help, buckets, registers }));
    this.connectionsAccepted = counter('tessera_typha_connections_accepted', 'Connections accepted (counted before the handshake).');
    this.connectionsRefused = counter('tessera_typha_connections_refused', 'Connections refused because the server was at its connection limit.');
    this.connectionsActive = gauge('tessera_typha_connections_active', 'Open connections, from accept to close.');
    this.connectionsStreaming = gauge('tessera_typha_connections_streaming', 'Connections that received their snapshot and are streaming deltas.');
    this.connectionsDropped = counter('tessera_typha_connections_dropped', 'Connections dropped to get down to the connection target (rebalancing).');
    this.connectionsGraceUsed = counter('tessera_typha_connections_grace_used', 'Clients that fell behind by more than the limit within their post-snapshot grace period.');
    this.connectionsClosed = getOrCreate(
      registry,
      'tessera_typha_connections_closed',
      () => new Counter({ name: 'tessera_typha_connections_closed', help: 'Connections closed, by reason.', labelNames: ['reason'], registers }),
    );
    this.clientLatencySecs = histogram('tessera_typha_client_latency_secs', 'How far behind the newest breadcrumb a client is, per breadcrumb it handles.');
    this.clientWriteLatencySecs = histogram('tessera_typha_client_write_latency_secs', 'Time to hand one message to the socket (including waiting for it to drain).');
    this.clientSnapshotSendSecs = histogram('tessera_typha_client_snapshot_send_secs', 'Time to send a client its snapshot.');
    this.kvsPerMsg = histogram('tessera_typha_kvs_per_msg', 'KVs per kvs message sent.', [1, 2, 5, 10, 20, 50, 100]);
    this.pingLatency = histogram('tessera_typha_ping_latency', 'Round trip from writing a ping to reading its pong.');
    this.snapshotsGenerated = counter('tessera_typha_snapshots_generated', 'Encoded snapshots generated (one per breadcrumb and compression that a client started at).');
    this.snapshotsReused = counter('tessera_typha_snapshots_reused', 'Clients that started at a breadcrumb whose encoded snapshot already existed.');
    this.snapshotRawBytes = gauge('tessera_typha_snapshot_raw_bytes', 'Uncompressed size of the last generated snapshot (the kvs messages).');
    this.snapshotCompressedBytes = getOrCreate(
      registry,
      'tessera_typha_snapshot_compressed_bytes',
      () =>
        new Gauge({
          name: 'tessera_typha_snapshot_compressed_bytes',
          help: 'Size on the wire (frames included) of the last generated snapshot, by compression.',
          labelNames: ['compression'],
          registers,
        }),
    );
  }
}
