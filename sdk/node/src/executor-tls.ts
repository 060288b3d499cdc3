/**
 * TLS on the executor's server, the leg the dispatcher dials (docs/security.md).
 * Given a certificate chain and its key the executor serves TLS; given also a
 * client CA it requires mutual TLS: a dialer without a client certificate that
 * CA signed fails the handshake.
 *
 * Everything is read and checked before anything starts, so a bad
 * configuration is an error naming the option (or env var, or CLI flag) and
 * the path, never a server that listens with no usable certificate, nor a
 * znode in ZooKeeper pointing at one.
 */
import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import * as grpc from '@grpc/grpc-js';

/** `ExecutorOptions.tls`: PEM files. */
export interface ExecutorTlsOptions {
  /** The executor's certificate chain (PEM): its certificate first, then any intermediates. */
  certFile: string;
  /** The private key of that certificate (PEM, unencrypted). */
  keyFile: string;
  /** Set: mutual TLS; the dialer (the dispatcher) must show a client certificate this CA (PEM) signed. */
  clientCaFile?: string;
}

type Field = keyof ExecutorTlsOptions;

/** What each field is called in an error: the option's name, an env var, or a CLI flag. */
export type ExecutorTlsNames = Record<Field, string>;

export const TLS_OPTION_NAMES: ExecutorTlsNames = Object.freeze({
  certFile: 'tls.certFile', keyFile: 'tls.keyFile', clientCaFile: 'tls.clientCaFile',
});

export const TLS_ENV_NAMES: ExecutorTlsNames = Object.freeze({
  certFile: 'TASKRING_EXECUTOR_TLS_CERT_FILE',
  keyFile: 'TASKRING_EXECUTOR_TLS_KEY_FILE',
  clientCaFile: 'TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE',
});

const FIELDS: readonly Field[] = ['certFile', 'keyFile', 'clientCaFile'];
const CERT_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;
const KEY_BLOCK = /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----/;

const reason = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/**
 * Check which fields are set (both cert and key, or neither; a client CA only
 * with them) and their types. Empty strings count as unset. None set:
 * undefined, or with `noneIsError` an error (an explicit `tls: {}`). Throws
 * naming the field as `names` calls it.
 */
export function checkExecutorTlsFields(
  tls: Partial<Record<Field, unknown>> | undefined,
  names: ExecutorTlsNames = TLS_OPTION_NAMES,
  noneIsError = false,
): ExecutorTlsOptions | undefined {
  if (tls === undefined || tls === null) return undefined;
  if (typeof tls !== 'object') throw new TypeError(`tls: must be an object { certFile, keyFile, clientCaFile? }, got ${typeof tls}`);
  const set: Partial<Record<Field, string>> = {};
  for (const f of FIELDS) {
    const v = tls[f];
    if (v === undefined || v === null || v === '') continue;
    if (typeof v !== 'string') throw new TypeError(`${names[f]}: must be a file path (string), got ${typeof v}`);
    set[f] = v;
  }
  const { certFile, keyFile, clientCaFile } = set;
  if (certFile !== undefined && keyFile === undefined) {
    throw new RangeError(`${names.keyFile}: required with ${names.certFile} (the key of its certificate)`);
  }
  if (keyFile !== undefined && certFile === undefined) {
    throw new RangeError(`${names.certFile}: required with ${names.keyFile} (the certificate of that key)`);
  }
  if (certFile === undefined || keyFile === undefined) {
    if (clientCaFile !== undefined) {
      throw new RangeError(`${names.clientCaFile}: mutual TLS needs ${names.certFile} and ${names.keyFile} too`);
    }
    if (noneIsError) throw new RangeError(`tls: give ${names.certFile} and ${names.keyFile} (or leave tls out for plain text)`);
    return undefined;
  }
  return clientCaFile === undefined ? { certFile, keyFile } : { certFile, keyFile, clientCaFile };
}

function readPem(path: string, name: string): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    throw new Error(`${name}: cannot read ${path}: ${reason(e)}`, { cause: e });
  }
}

function parseCertificates(pem: Buffer, path: string, name: string): X509Certificate[] {
  const blocks = pem.toString('latin1').match(CERT_BLOCK) ?? [];
  if (blocks.length === 0) throw new Error(`${name}: ${path} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  return blocks.map((block, i) => {
    try {
      return new X509Certificate(block);
    } catch (e) {
      throw new Error(`${name}: certificate ${i + 1} in ${path} does not parse: ${reason(e)}`, { cause: e });
    }
  });
}

function parseKey(pem: Buffer, path: string, name: string): KeyObject {
  const block = KEY_BLOCK.exec(pem.toString('latin1'));
  if (block === null) throw new Error(`${name}: ${path} holds no PEM private key (-----BEGIN PRIVATE KEY-----)`);
  try {
    return createPrivateKey(block[0]);
  } catch (e) {
    throw new Error(`${name}: the private key in ${path} does not parse: ${reason(e)}`, { cause: e });
  }
}

/**
 * Read and check the PEM files of `tls` (fields as checkExecutorTlsFields
 * returns them) and build the server's credentials. Errors name the field as
 * `names` calls it and the path.
 */
export function executorServerCredentials(tls: ExecutorTlsOptions, names: ExecutorTlsNames = TLS_OPTION_NAMES): grpc.ServerCredentials {
  const chain = readPem(tls.certFile, names.certFile);
  const keyPem = readPem(tls.keyFile, names.keyFile);
  const caPem = tls.clientCaFile === undefined ? null : readPem(tls.clientCaFile, names.clientCaFile);
  const [leaf] = parseCertificates(chain, tls.certFile, names.certFile);
  const key = parseKey(keyPem, tls.keyFile, names.keyFile);
  if (leaf !== undefined && !leaf.checkPrivateKey(key)) {
    throw new Error(`${names.keyFile}: the key in ${tls.keyFile} does not belong to the certificate in ${tls.certFile} (${names.certFile})`);
  }
  if (caPem !== null && tls.clientCaFile !== undefined) parseCertificates(caPem, tls.clientCaFile, names.clientCaFile);
  try { // what OpenSSL itself refuses (e.g. a key type it does not serve with)
    createSecureContext({ cert: chain, key: keyPem, ...(caPem === null ? {} : { ca: caPem }) });
  } catch (e) {
    throw new Error(`tls: OpenSSL refuses ${names.certFile}=${tls.certFile} with ${names.keyFile}=${tls.keyFile}: ${reason(e)}`, { cause: e });
  }
  return grpc.ServerCredentials.createSsl(caPem, [{ cert_chain: chain, private_key: keyPem }], caPem !== null);
}

/**
 * `ExecutorOptions.tls` from TASKRING_EXECUTOR_TLS_CERT_FILE and
 * TASKRING_EXECUTOR_TLS_KEY_FILE (both or neither), with
 * TASKRING_EXECUTOR_TLS_CLIENT_CA_FILE for mutual TLS; undefined when none is
 * set (plain text). The files are read and checked here too, so an error names
 * the env var that points at the bad file.
 */
export function executorTlsFromEnv(env: NodeJS.ProcessEnv = process.env): ExecutorTlsOptions | undefined {
  const tls = checkExecutorTlsFields({
    certFile: env[TLS_ENV_NAMES.certFile], keyFile: env[TLS_ENV_NAMES.keyFile], clientCaFile: env[TLS_ENV_NAMES.clientCaFile],
  }, TLS_ENV_NAMES);
  if (tls !== undefined) executorServerCredentials(tls, TLS_ENV_NAMES);
  return tls;
}
