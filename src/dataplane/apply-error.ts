/**
 * A dataplane write that failed every quick retry with nothing to narrow it to (a backend's
 * tool missing or broken, its lock held): an outage, which the driver retries with backoff and
 * never lets stop its loop. Each backend throws its own subclass (`IptablesApplyError`,
 * `IpSetsApplyError`); anything else a backend throws is a bug and stops the driver.
 */
export class DataplaneApplyError extends Error {
  override readonly name: string = 'DataplaneApplyError';
}
