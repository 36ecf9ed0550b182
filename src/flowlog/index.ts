/** The denied-flow log: NFLOG → attributed JSON lines. Re-exports only. */
export { DeniedFlowLog, resolveFromTables, type DeniedFlow, type DeniedFlowLogOptions, type DropAttribution, type DropResolver } from './denied-flow-log.ts';
export { EndpointLookup, type EndpointIdentity } from './endpoint-lookup.ts';
export { NflogPcapParser, LINKTYPE_NFLOG, type NflogRecord } from './nflog-pcap.ts';
export { parsePacket, type PacketFlow } from './packet-header.ts';
