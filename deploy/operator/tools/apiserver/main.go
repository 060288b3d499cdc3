// Command apiserver runs a real Kubernetes API server for the operator's end-to-end test:
// etcd embedded in the process, and the apiextensions API server (k8s.io/apiextensions-apiserver,
// the server that serves CustomResourceDefinitions and their custom resources inside every
// kube-apiserver) on a free loopback port. It is the part of Kubernetes the AsyncJobConfig
// operator talks to: CRDs, custom resources with their OpenAPI validation at admission, the
// status subresource, watches, finalizers. It has no core API (no pods, namespaces or events).
//
// Built from the Go module proxy by ../ensure-apiserver.sh, because a whole kube-apiserver
// cannot be: k8s.io/kubernetes replaces its staging modules with local paths, so `go install`
// refuses it, while the staging modules used here are published modules of their own.
//
//	apiserver --kubeconfig OUT [--data-dir DIR]
//
// writes a kubeconfig for the server to OUT once /healthz answers, then serves until SIGTERM or
// SIGINT. The kubeconfig authenticates with the server's loopback token (group system:masters),
// so no authentication or authorization webhook is needed.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"go.etcd.io/etcd/server/v3/embed"
	extensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apiextensions-apiserver/pkg/cmd/server/options"
	generatedopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/mux"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/apiserver/pkg/util/openapi"
	"k8s.io/client-go/kubernetes"
	basecompatibility "k8s.io/component-base/compatibility"
)

// A kubeconfig the delegated authentication and authorization options insist on at start-up.
// Nothing calls it: the loopback token is in system:masters, which is authorized without a
// SubjectAccessReview, and --authentication-skip-lookup skips the one read it would do.
const unusedKubeconfig = `apiVersion: v1
kind: Config
clusters:
- cluster: {server: "http://127.0.0.1:1"}
  name: unused
contexts:
- context: {cluster: unused, user: unused}
  name: unused
current-context: unused
users:
- name: unused
  user: {token: unused}
`

func main() {
	out := flag.String("kubeconfig", "", "where to write the kubeconfig for the server (required)")
	dataDir := flag.String("data-dir", "", "etcd's data and the server's certificates (default: a new temporary folder)")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "apiserver: --kubeconfig is required")
		os.Exit(2)
	}
	if err := run(*out, *dataDir); err != nil {
		fmt.Fprintf(os.Stderr, "apiserver: %v\n", err)
		os.Exit(1)
	}
}

func run(out, dataDir string) error {
	if dataDir == "" {
		d, err := os.MkdirTemp("", "taskring-apiserver-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dataDir = d
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	etcdURL, closeEtcd, err := startEtcd(filepath.Join(dataDir, "etcd"))
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	defer closeEtcd()

	unused := filepath.Join(dataDir, "unused.kubeconfig")
	if err := os.WriteFile(unused, []byte(unusedKubeconfig), 0o600); err != nil {
		return err
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	s := options.NewCustomResourceDefinitionsServerOptions(os.Stdout, os.Stderr)
	featureGate := utilfeature.DefaultMutableFeatureGate
	effectiveVersion := compatibility.DefaultBuildEffectiveVersion()
	registry := basecompatibility.NewComponentGlobalsRegistry()
	if err := registry.Register(basecompatibility.DefaultKubeComponent, effectiveVersion, featureGate); err != nil {
		return err
	}
	s.ServerRunOptions.ComponentGlobalsRegistry = registry
	fs := pflag.NewFlagSet("apiserver", pflag.ContinueOnError)
	s.AddFlags(fs)
	s.RecommendedOptions.SecureServing.Listener = listener
	s.RecommendedOptions.SecureServing.BindPort = listener.Addr().(*net.TCPAddr).Port
	s.RecommendedOptions.SecureServing.ServerCert.CertDirectory = filepath.Join(dataDir, "certs")
	s.RecommendedOptions.SecureServing.ExternalAddress = listener.Addr().(*net.TCPAddr).IP
	if err := s.APIEnablement.RuntimeConfig.Set("api/all=true"); err != nil {
		return err
	}
	if err := fs.Parse([]string{
		"--etcd-servers", etcdURL,
		"--authentication-skip-lookup",
		"--authentication-kubeconfig", unused,
		"--authorization-kubeconfig", unused,
		"--kubeconfig", unused,
		// These need a kube-apiserver's core API (namespaces, webhooks' services, flow schemas),
		// which this server has not. What the operator relies on, the CRD's OpenAPI validation,
		// is no admission plugin: the custom resource handler applies it on every write.
		"--enable-priority-and-fairness=false",
		"--disable-admission-plugins", "NamespaceLifecycle,MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ValidatingAdmissionPolicy,MutatingAdmissionPolicy",
	}); err != nil {
		return err
	}
	if err := registry.Set(); err != nil {
		return err
	}
	if err := s.Complete(); err != nil {
		return err
	}
	if err := s.Validate(); err != nil {
		return err
	}
	config, err := s.Config()
	if err != nil {
		return err
	}
	definitions := openapi.GetOpenAPIDefinitionsWithoutDisabledFeatures(generatedopenapi.GetOpenAPIDefinitions)
	config.GenericConfig.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(definitions, openapinamer.NewDefinitionNamer(extensionsapiserver.Scheme))
	server, err := config.Complete().New(genericapiserver.NewEmptyDelegate())
	if err != nil {
		return err
	}
	crds, err := apiextensionsclient.NewForConfig(server.GenericAPIServer.LoopbackClientConfig)
	if err != nil {
		return err
	}
	serveDiscovery(server.GenericAPIServer.Handler.NonGoRestfulMux, crds)
	serveErr := make(chan error, 1)
	go func() { serveErr <- server.GenericAPIServer.PrepareRun().RunWithContext(ctx) }()

	loopback := server.GenericAPIServer.LoopbackClientConfig
	client, err := kubernetes.NewForConfig(loopback)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		status := 0
		client.CoreV1().RESTClient().Get().AbsPath("/healthz").Do(ctx).StatusCode(&status)
		if status == 200 {
			break
		}
		select {
		case err := <-serveErr:
			return fmt.Errorf("server stopped before it was ready: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			return errors.New("/healthz did not answer 200 within 2 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
	host := fmt.Sprintf("https://%s", listener.Addr().String())
	// The serving certificate is self-signed for the loopback name only: the client skips
	// verification, as it would with any throwaway test server on 127.0.0.1.
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- cluster: {server: %q, insecure-skip-tls-verify: true}
  name: taskring-test
contexts:
- context: {cluster: taskring-test, user: loopback, namespace: default}
  name: taskring-test
current-context: taskring-test
users:
- name: loopback
  user: {token: %q}
`, host, loopback.BearerToken)
	tmp := out + ".tmp"
	if err := os.WriteFile(tmp, []byte(kubeconfig), 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, out); err != nil { // atomic: a reader never sees half a file
		return err
	}
	fmt.Fprintf(os.Stderr, "apiserver: ready at %s, kubeconfig in %s\n", host, out)
	select {
	case <-ctx.Done():
		<-serveErr
		return nil
	case err := <-serveErr:
		return err
	}
}

// serveDiscovery answers the two discovery lists a kube-apiserver's other parts serve and this
// server alone does not: /apis, the API groups (in a kube-apiserver the aggregator lists them;
// here: apiextensions.k8s.io and every CRD's group, read from the CRDs at each request), and
// /api, the core API, with version v1 and only namespaces listed (not served). Clients such as
// kopf read both before anything else and stop at a 404; a request for a core resource (kopf's
// events) is answered 404, which kopf logs and ignores. Each group's own document (/apis/GROUP/VERSION) is the
// apiextensions server's.
func serveDiscovery(mux *mux.PathRecorderMux, crds apiextensionsclient.Interface) {
	mux.HandleFunc("/apis", func(w http.ResponseWriter, r *http.Request) {
		list, err := crds.ApiextensionsV1().CustomResourceDefinitions().List(r.Context(), metav1.ListOptions{})
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		groups := []metav1.APIGroup{apiGroup("apiextensions.k8s.io", []string{"v1"})}
		seen := map[string]bool{}
		for _, crd := range list.Items {
			if seen[crd.Spec.Group] {
				continue
			}
			seen[crd.Spec.Group] = true
			var versions []string
			for _, v := range crd.Spec.Versions {
				if v.Served {
					versions = append(versions, v.Name)
				}
			}
			groups = append(groups, apiGroup(crd.Spec.Group, versions))
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: groups})
	})
	reply := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(body))
		}
	}
	mux.HandleFunc("/api", reply(`{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1"}]}`))
	// Namespaces are listed, though not served: kopf waits to see the resource in discovery
	// before it starts any watch, and watching cluster-wide it never asks for one.
	mux.HandleFunc("/api/v1", reply(`{"kind":"APIResourceList","groupVersion":"v1","resources":[`+
		`{"name":"namespaces","singularName":"namespace","namespaced":false,"kind":"Namespace","verbs":["get","list","watch"]}]}`))
}

func apiGroup(name string, versions []string) metav1.APIGroup {
	g := metav1.APIGroup{Name: name}
	for _, v := range versions {
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: name + "/" + v, Version: v})
	}
	if len(g.Versions) > 0 {
		g.PreferredVersion = g.Versions[0]
	}
	return g
}

// startEtcd runs etcd in this process on free loopback ports and returns its client URL.
func startEtcd(dir string) (string, func(), error) {
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.LogLevel = "error"
	client, peer, err := freeURLs()
	if err != nil {
		return "", nil, err
	}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return "", nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(time.Minute):
		e.Close()
		return "", nil, errors.New("etcd was not ready within a minute")
	}
	return client.String(), e.Close, nil
}

func freeURLs() (url.URL, url.URL, error) {
	var urls [2]url.URL
	for i := range urls {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return url.URL{}, url.URL{}, err
		}
		urls[i] = url.URL{Scheme: "http", Host: l.Addr().String()}
		l.Close()
	}
	return urls[0], urls[1], nil
}
