package io.taskring.executor;

import io.grpc.ServerCredentials;
import io.grpc.TlsServerCredentials;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyFactory;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The executor's TLS files: a certificate chain and its key, and for mutual TLS the CA
 * that signs the dispatchers' client certificates. Each file is named in errors by the
 * option it came from (a builder field, an environment variable or a CLI flag), so a bad
 * path or a file that is not what it should be is reported before anything listens.
 */
final class ExecutorTls {
    static final String ENV_CERT = TaskringExecutor.ENV_TLS_CERT_FILE;
    static final String ENV_KEY = TaskringExecutor.ENV_TLS_KEY_FILE;
    static final String ENV_CLIENT_CA = TaskringExecutor.ENV_TLS_CLIENT_CA_FILE;

    private static final Pattern PEM = Pattern.compile(
            "-----BEGIN ([A-Z0-9 ]+)-----\\s*([A-Za-z0-9+/=\\s]*?)-----END \\1-----");

    /** The names the three files go by in error messages. */
    record Names(String cert, String key, String clientCa) {
        static final Names BUILDER = new Names("tls_cert_file", "tls_key_file", "tls_client_ca_file");
        static final Names ENV = new Names(ENV_CERT, ENV_KEY, ENV_CLIENT_CA);
    }

    final Path cert;
    final Path key;
    final Path clientCa; // null: TLS without client certificates
    private final Names names;

    private ExecutorTls(Path cert, Path key, Path clientCa, Names names) {
        this.cert = cert;
        this.key = key;
        this.clientCa = clientCa;
        this.names = names;
    }

    /**
     * Checks the combination only (the files are read by {@link #credentials}): cert and key
     * both or neither, a client CA only with both. Null when none is given.
     */
    static ExecutorTls of(Path cert, Path key, Path clientCa, Names names) {
        if (cert == null && key == null) {
            if (clientCa != null) {
                throw new IllegalArgumentException(names.clientCa + ": mutual TLS needs the executor's own certificate: set "
                        + names.cert + " and " + names.key + " too");
            }
            return null;
        }
        if (cert == null) {
            throw new IllegalArgumentException(names.cert + ": required with " + names.key
                    + " (the executor's certificate chain and its key go together)");
        }
        if (key == null) {
            throw new IllegalArgumentException(names.key + ": required with " + names.cert
                    + " (the executor's certificate chain and its key go together)");
        }
        return new ExecutorTls(cert, key, clientCa, names);
    }

    /** The three environment variables; unset and empty are the same. Null when none is set. */
    static ExecutorTls fromEnv(Map<String, String> env) {
        return of(path(env.get(ENV_CERT)), path(env.get(ENV_KEY)), path(env.get(ENV_CLIENT_CA)), Names.ENV);
    }

    static Path path(String value) {
        return value == null || value.isBlank() ? null : Path.of(value);
    }

    boolean mutual() {
        return clientCa != null;
    }

    /**
     * Reads and parses the files, then has grpc-netty build its TLS context from them, so
     * that every mistake shows here, naming the option and the path, and not at start().
     */
    ServerCredentials credentials() {
        byte[] chain = read(cert, names.cert);
        byte[] pk = read(key, names.key);
        checkCertificates(chain, cert, names.cert);
        checkKey(pk, key, names.key);
        byte[] ca = null;
        if (clientCa != null) {
            ca = read(clientCa, names.clientCa);
            checkCertificates(ca, clientCa, names.clientCa);
        }
        ServerCredentials creds;
        try {
            TlsServerCredentials.Builder b = TlsServerCredentials.newBuilder()
                    .keyManager(new ByteArrayInputStream(chain), new ByteArrayInputStream(pk));
            if (ca != null) {
                b.trustManager(new ByteArrayInputStream(ca)).clientAuth(TlsServerCredentials.ClientAuth.REQUIRE);
            }
            creds = b.build();
        } catch (IOException e) { // from in-memory streams: not expected
            throw new IllegalArgumentException(names.cert + "/" + names.key + ": " + e.getMessage(), e);
        }
        try {
            // Builds netty's SslContext now (nothing listens): a key that does not fit, say.
            NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0), creds);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException(names.cert + " " + cert + " / " + names.key + " " + key
                    + (ca == null ? "" : " / " + names.clientCa + " " + clientCa) + ": not usable for TLS: " + e, e);
        }
        return creds;
    }

    private static byte[] read(Path p, String name) {
        try {
            return Files.readAllBytes(p);
        } catch (IOException e) {
            throw new IllegalArgumentException(name + ": cannot read " + p + ": " + e, e);
        }
    }

    private static void checkCertificates(byte[] pem, Path p, String name) {
        String text = new String(pem, StandardCharsets.US_ASCII);
        if (!text.contains("-----BEGIN CERTIFICATE-----")) {
            throw new IllegalArgumentException(name + ": " + p + " holds no PEM certificate (-----BEGIN CERTIFICATE-----)");
        }
        try {
            if (CertificateFactory.getInstance("X.509").generateCertificates(new ByteArrayInputStream(pem)).isEmpty()) {
                throw new CertificateException("no certificate");
            }
        } catch (CertificateException e) {
            throw new IllegalArgumentException(name + ": " + p + " is not a PEM certificate: " + e.getMessage(), e);
        }
    }

    private static void checkKey(byte[] pem, Path p, String name) {
        Matcher m = PEM.matcher(new String(pem, StandardCharsets.US_ASCII));
        if (!m.find()) {
            throw new IllegalArgumentException(name + ": " + p + " holds no PEM private key (-----BEGIN PRIVATE KEY-----)");
        }
        String type = m.group(1);
        if (type.equals("EC PRIVATE KEY") || type.equals("RSA PRIVATE KEY")) {
            throw new IllegalArgumentException(name + ": " + p + " is a " + type + " (SEC1/PKCS#1); grpc-java reads PKCS#8"
                    + " (-----BEGIN PRIVATE KEY-----): convert it with openssl pkcs8 -topk8 -nocrypt");
        }
        if (!type.equals("PRIVATE KEY")) {
            throw new IllegalArgumentException(name + ": " + p + " holds a PEM " + type
                    + ", not an unencrypted PKCS#8 private key (-----BEGIN PRIVATE KEY-----)");
        }
        byte[] der;
        try {
            der = Base64.getMimeDecoder().decode(m.group(2));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(name + ": " + p + " is not a PEM private key: " + e.getMessage(), e);
        }
        for (String algorithm : new String[] {"EC", "RSA", "Ed25519", "Ed448"}) {
            try {
                KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
                return;
            } catch (Exception tryNext) {
                // not this algorithm
            }
        }
        throw new IllegalArgumentException(name + ": " + p + " is not a PKCS#8 EC, RSA or EdDSA private key");
    }
}
