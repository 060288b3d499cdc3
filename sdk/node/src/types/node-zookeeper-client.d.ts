// The part of node-zookeeper-client (a pure-JS client, no types of its own) that zk.ts uses.
declare module 'node-zookeeper-client' {
  import { EventEmitter } from 'node:events';

  export interface State {
    readonly name: string;
    readonly code: number;
    getName(): string;
    getCode(): number;
  }
  export const State: {
    readonly DISCONNECTED: State;
    readonly SYNC_CONNECTED: State;
    readonly AUTH_FAILED: State;
    readonly CONNECTED_READ_ONLY: State;
    readonly SASL_AUTHENTICATED: State;
    readonly EXPIRED: State;
  };

  export const CreateMode: {
    readonly PERSISTENT: number;
    readonly EPHEMERAL: number;
  };

  export class Exception extends Error {
    static readonly NO_NODE: number;
    static readonly NODE_EXISTS: number;
    static readonly BAD_VERSION: number;
    static readonly CONNECTION_LOSS: number;
    static readonly SESSION_EXPIRED: number;
    getCode(): number;
    getName(): string;
  }

  export interface Stat {
    version: number;
    ephemeralOwner: Buffer;
  }

  export interface ClientOptions {
    sessionTimeout?: number;
    spinDelay?: number;
    retries?: number;
    sessionId?: Buffer;
    sessionPassword?: Buffer;
  }

  type Done = (error: Exception | Error | null) => void;

  export class Client extends EventEmitter {
    connect(): void;
    close(): void;
    getState(): State;
    getSessionId(): Buffer;
    getSessionPassword(): Buffer;
    getSessionTimeout(): number;
    create(path: string, data: Buffer | null, mode: number, callback: (error: Exception | Error | null, path: string) => void): void;
    mkdirp(path: string, callback: (error: Exception | Error | null, path: string) => void): void;
    exists(path: string, callback: (error: Exception | Error | null, stat: Stat | null) => void): void;
    getData(path: string, callback: (error: Exception | Error | null, data: Buffer | null, stat: Stat) => void): void;
    setData(path: string, data: Buffer, version: number, callback: (error: Exception | Error | null, stat: Stat) => void): void;
    remove(path: string, version: number, callback: Done): void;
  }

  export function createClient(connectionString: string, options?: ClientOptions): Client;
}
