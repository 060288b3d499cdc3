package taskring

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	pb "github.com/taskring/taskring/sdk/go/pb/taskring/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
)

const testSecret = "trk_test-secret-never-shown"

// securedNode is a fakeNode behind the dispatcher's check: it records the
// authorization metadata of every call and refuses one without the secret.
type securedNode struct {
	mu   sync.Mutex
	seen []string
}

func (s *securedNode) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	got := md.Get("authorization")
	s.mu.Lock()
	s.seen = append(s.seen, strings.Join(got, "|"))
	s.mu.Unlock()
	if len(got) == 0 {
		return nil, status.Error(codes.Unauthenticated, "authorization: a token is required")
	}
	if got[0] != "Bearer "+testSecret {
		return nil, status.Error(codes.Unauthenticated, "authorization: the token is not known to this node")
	}
	return h(ctx, req)
}

func (s *securedNode) headers() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

func securedClient(t *testing.T, opts ...ClientOption) (*securedNode, *Client) {
	t.Helper()
	sec := &securedNode{}
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(grpc.UnaryInterceptor(sec.intercept))
	pb.RegisterTaskServiceServer(srv, &fakeNode{name: "a"})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	dialer := grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) })
	c, err := NewClient(append([]ClientOption{WithNodes("passthrough:///a"), WithTimeout(5 * time.Second),
		WithDialOptions(dialer)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return sec, c
}

func TestWithTokenSendsTheBearerHeaderOnEveryCall(t *testing.T) {
	sec, c := securedClient(t, WithToken(testSecret))
	ctx := context.Background()
	if _, err := c.Submit(ctx, TaskSpec{Namespace: "shop", TaskType: "t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SubmitBatch(ctx, []TaskSpec{{Namespace: "shop", TaskType: "t"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Cancel(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	got := sec.headers()
	if len(got) != 4 {
		t.Fatalf("%d calls seen, want 4", len(got))
	}
	for _, h := range got {
		if h != "Bearer "+testSecret { // exactly one value: never appended twice
			t.Errorf("authorization %q", h)
		}
	}
}

func TestWithoutATokenTheRefusalIsAPermissionDeniedError(t *testing.T) {
	sec, c := securedClient(t)
	_, err := c.Get(context.Background(), "t1")
	var pd *PermissionDeniedError
	if !errors.As(err, &pd) || pd.Code != codes.Unauthenticated {
		t.Fatalf("got %v", err)
	}
	if h := sec.headers(); len(h) != 1 || h[0] != "" {
		t.Errorf("a client without WithToken sent authorization %q", h)
	}
}

func TestAWrongTokenIsRefusedAndTheSecretIsNotInTheError(t *testing.T) {
	wrong := "trk_wrong-secret-of-another-node"
	_, c := securedClient(t, WithToken(wrong))
	_, err := c.Submit(context.Background(), TaskSpec{Namespace: "shop", TaskType: "t"})
	if status.Code(err) != codes.Unauthenticated || strings.Contains(err.Error(), wrong) {
		t.Fatalf("got %v", err)
	}
}

func TestWithTokenEmptyAndBadTLSFilesFailNewClient(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.pem")
	for name, opts := range map[string][]ClientOption{
		"empty token":     {WithToken("")},
		"no CA":           {WithTLS("", "", "")},
		"missing CA":      {WithTLS(missing, "", "")},
		"cert, no key":    {WithTLS(missing, missing, "")},
		"bad client pair": {WithToken(testSecret), WithTLS(writeCA(t, dir), missing, missing)},
	} {
		_, err := NewClient(append([]ClientOption{WithNodes("127.0.0.1:1")}, opts...)...)
		if err == nil {
			t.Errorf("%s: NewClient succeeded", name)
		} else if strings.Contains(err.Error(), testSecret) {
			t.Errorf("%s: the secret is in the error: %v", name, err)
		}
	}
}

// writeCA writes a CA's certificate to dir/ca.pem and returns the path (a
// TLS node is served by TestWithTLSAndTokenOverARealTLSListener).
func writeCA(t *testing.T, dir string) string {
	t.Helper()
	_, _, caPEM := testPKI(t)
	p := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(p, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// testPKI makes a CA and a server certificate for 127.0.0.1 it signed.
func testPKI(t *testing.T) (serverCert tls.Certificate, ca *x509.Certificate, caPEM []byte) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ = x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "node"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, ca,
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
}

func TestWithTLSAndTokenOverARealTLSListener(t *testing.T) {
	cert, _, caPEM := testPKI(t)
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sec := &securedNode{}
	srv := grpc.NewServer(grpc.Creds(credentials.NewServerTLSFromCert(&cert)), grpc.UnaryInterceptor(sec.intercept))
	pb.RegisterTaskServiceServer(srv, &fakeNode{name: "tls"})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)

	c, err := NewClient(WithNodes(lis.Addr().String()), WithTimeout(5*time.Second), WithToken(testSecret), WithTLS(caFile, "", ""))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Get(context.Background(), "t1"); err != nil {
		t.Fatalf("over TLS: %v", err)
	}
	// Plaintext against the TLS listener fails: WithTLS really is what made it work.
	plain, _ := NewClient(WithNodes(lis.Addr().String()), WithTimeout(2*time.Second), WithToken(testSecret))
	defer plain.Close()
	if _, err := plain.Get(context.Background(), "t1"); status.Code(err) != codes.Unavailable {
		t.Errorf("plaintext to a TLS node: %v", err)
	}
}
