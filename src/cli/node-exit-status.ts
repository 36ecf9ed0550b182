/**
 * Exit statuses of the node commands (`tessera agent`, `tessera cleanup`) beyond 0 (done),
 * 1 (failed while running) and 2 (usage error). Each is one documented refusal, so a
 * DaemonSet pod's last exit code tells an operator what to fix.
 */

/** The host cannot be programmed: iptables/ipset missing, or no NET_ADMIN. */
export const EXIT_CANNOT_PROGRAM = 3;

/**
 * The node's `cali-` chains or IP sets were not written by Tessera (Felix's): the agent does
 * not start, and `tessera cleanup` does not remove them without `--force`.
 */
export const EXIT_FOREIGN_DATAPLANE = 4;
