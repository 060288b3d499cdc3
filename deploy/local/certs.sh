#!/usr/bin/env bash
# Certificates for TLS on the local stack and in tests (docs/security.md); never for production.
#
#   bash deploy/local/certs.sh [dir]     # default <repo>/.stack/certs (git-ignored)
#
# Writes, as PEM (EC P-256 keys in PKCS#8, valid 825 days):
#   ca.pem ca.key                  the local CA
#   server.pem server.key          the node's certificate, for 127.0.0.1 and localhost (SAN)
#   client.pem client.key          a client certificate the CA signed (mutual TLS)
#   other-ca.pem other-ca.key      a second, unrelated CA (the "wrong CA" of the tests)
#   other-client.pem other-client.key   a client certificate that CA signed
# Then a node is started with
#   TASKRING_TLS_CERT_FILE=<dir>/server.pem TASKRING_TLS_KEY_FILE=<dir>/server.key
#   [TASKRING_TLS_CLIENT_CA_FILE=<dir>/ca.pem]      # mutual TLS
# Existing files are replaced: run it again for fresh ones.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DIR="${1:-$ROOT/.stack/certs}"
mkdir -p "$DIR"
cd "$DIR"
umask 077   # the keys are secrets, even local ones
DAYS=825

# PKCS#8 ("BEGIN PRIVATE KEY"), not the SEC1 "BEGIN EC PRIVATE KEY" of `openssl ecparam`:
# grpc-java's TlsChannelCredentials (netty) reads only PKCS#8; Python, Go and Node read both.
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null; }

ca() {  # name subject
    key "$1"
    openssl req -x509 -new -key "$1.key" -sha256 -days "$DAYS" -subj "/CN=$2" -out "$1.pem" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
}

leaf() {  # name subject ca extensions...
    local name=$1 subject=$2 issuer=$3 ext
    shift 3
    ext="$(mktemp)"
    printf '%s\n' "$@" >"$ext"
    key "$name"
    openssl req -new -key "$name.key" -subj "/CN=$subject" -out "$name.csr"
    openssl x509 -req -in "$name.csr" -CA "$issuer.pem" -CAkey "$issuer.key" -CAcreateserial -sha256 \
        -days "$DAYS" -extfile "$ext" -out "$name.pem" 2>/dev/null
    rm -f "$name.csr" "$ext"
}

ca ca "taskring local CA"
ca other-ca "an unrelated CA"
leaf server "taskring node" ca "subjectAltName=IP:127.0.0.1,DNS:localhost" \
    "extendedKeyUsage=serverAuth" "keyUsage=critical,digitalSignature,keyEncipherment"
leaf client "taskring client" ca "extendedKeyUsage=clientAuth" "keyUsage=critical,digitalSignature"
leaf other-client "a client of another CA" other-ca "extendedKeyUsage=clientAuth" \
    "keyUsage=critical,digitalSignature"
rm -f ./*.srl
chmod 644 ./*.pem
echo "certs.sh: CA, server (127.0.0.1, localhost), client and an unrelated CA in $DIR"
