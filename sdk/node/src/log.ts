/** Where the executor reports what it cannot throw (a lost ZooKeeper session, a re-registration). */
export interface Logger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** Default: warnings and errors to stderr, info dropped (a library should not chatter). */
export const consoleLogger: Logger = Object.freeze({
  info: () => undefined,
  warn: (m: string) => console.warn(`taskring: ${m}`),
  error: (m: string) => console.error(`taskring: ${m}`),
});

/** For tests and for callers that log elsewhere. */
export const silentLogger: Logger = Object.freeze({ info: () => undefined, warn: () => undefined, error: () => undefined });
