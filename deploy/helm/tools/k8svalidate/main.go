// Command k8svalidate checks rendered Kubernetes manifests (the output of
// `helm template`) against the Kubernetes API types, offline.
//
// Every YAML document read from stdin (or from the files named as arguments,
// "-" meaning stdin) is decoded strictly into the typed object that its
// apiVersion/kind names in client-go's scheme: an unknown field, a duplicate
// field, a value of the wrong type, a missing apiVersion or kind, or a kind the
// scheme does not know is an error. Kinds outside that scheme are accepted only
// when named with --allow-kind GROUP/VERSION/KIND (e.g.
// --allow-kind monitoring.coreos.com/v1/ServiceMonitor; repeatable), and are
// then checked only for apiVersion, kind and metadata.name.
//
// A kind whose apiVersion the Kubernetes release given by --kube-version
// (default: the release of the pinned k8s.io/api, 1.37) no longer serves, such
// as extensions/v1beta1 Deployment, is an error too: client-go keeps those types
// in its scheme, so the types' own lifecycle (APILifecycleRemoved) decides.
//
// After decoding, cheap semantic checks run: metadata.name is set; a
// Deployment's, StatefulSet's, DaemonSet's or ReplicaSet's spec.selector is
// non-empty and matches its pod template's labels; every container port name
// is a valid port name (at most 15 characters, lowercase letters, digits and
// '-'); no two documents name the same object.
//
// Output, on stdout, one line per non-empty document, numbered from 1 across
// all inputs in order (documents holding only comments are skipped):
//
//	ok <kind>/<name>
//	error: document N (<kind>/<name>): <reason>
//
// Exit status: 0 all documents valid; 1 any error (or no documents at all);
// 2 bad usage or unreadable input.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// kindList is a repeatable --allow-kind flag.
type kindList map[schema.GroupVersionKind]bool

func (k kindList) String() string {
	var s []string
	for gvk := range k {
		s = append(s, gvkString(gvk))
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}

func (k kindList) Set(v string) error {
	i := strings.LastIndex(v, "/")
	if i <= 0 || i == len(v)-1 {
		return fmt.Errorf("want GROUP/VERSION/KIND (or VERSION/KIND for the core group), got %q", v)
	}
	gv, err := schema.ParseGroupVersion(v[:i])
	if err != nil {
		return fmt.Errorf("bad apiVersion in %q: %v", v, err)
	}
	k[gv.WithKind(v[i+1:])] = true
	return nil
}

func gvkString(gvk schema.GroupVersionKind) string {
	return gvk.GroupVersion().String() + "/" + gvk.Kind
}

// header is the part of a document read leniently, to name it in messages and
// to pick the path for allowed kinds. A field of the wrong type reads as empty
// here; the strict decoding reports it.
type header struct {
	APIVersion, Kind string
	Metadata         struct{ Name, Namespace string }
}

func readHeader(doc []byte) (header, error) {
	var h header
	var m map[string]interface{}
	if err := yaml.Unmarshal(doc, &m); err != nil {
		return h, fmt.Errorf("not a YAML mapping: %v", err)
	}
	if m == nil {
		return h, errors.New("not a YAML mapping")
	}
	h.APIVersion, _ = m["apiVersion"].(string)
	h.Kind, _ = m["kind"].(string)
	if md, ok := m["metadata"].(map[string]interface{}); ok {
		h.Metadata.Name, _ = md["name"].(string)
		h.Metadata.Namespace, _ = md["namespace"].(string)
	}
	return h, nil
}

// defaultKubeVersion is the Kubernetes release of the pinned k8s.io/api (v0.37.x).
const defaultKubeVersion = "1.37"

type validator struct {
	decoder              runtime.Decoder
	allowed              kindList
	kubeMajor, kubeMinor int
	out                  io.Writer
	n                    int            // documents seen so far
	failed               int            // documents with an error
	seen                 map[string]int // object identity -> document number
}

func newValidator(allowed kindList, kubeVersion string, out io.Writer) (*validator, error) {
	v := &validator{
		decoder: serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer(),
		allowed: allowed,
		out:     out,
		seen:    map[string]int{},
	}
	if _, err := fmt.Sscanf(strings.TrimPrefix(kubeVersion, "v"), "%d.%d", &v.kubeMajor, &v.kubeMinor); err != nil {
		return nil, fmt.Errorf("--kube-version %q: want MAJOR.MINOR such as 1.37", kubeVersion)
	}
	return v, nil
}

// removedAPI is implemented by the k8s.io/api types of prerelease API versions.
type removedAPI interface {
	APILifecycleRemoved() (major, minor int)
}

type replacedAPI interface {
	APILifecycleReplacement() schema.GroupVersionKind
}

// checkServed fails for an object whose API version the target release no
// longer serves.
func (v *validator) checkServed(obj runtime.Object, gvk schema.GroupVersionKind) error {
	r, ok := obj.(removedAPI)
	if !ok {
		return nil
	}
	major, minor := r.APILifecycleRemoved()
	if major == 0 || v.kubeMajor < major || (v.kubeMajor == major && v.kubeMinor < minor) {
		return nil
	}
	msg := fmt.Sprintf("apiVersion %q of kind %q is no longer served since Kubernetes %d.%d (checking for %d.%d)", gvk.GroupVersion().String(), gvk.Kind, major, minor, v.kubeMajor, v.kubeMinor)
	if rep, ok := obj.(replacedAPI); ok {
		if to := rep.APILifecycleReplacement(); !to.Empty() {
			msg += fmt.Sprintf("; use %s %s", to.GroupVersion().String(), to.Kind)
		}
	}
	return errors.New(msg)
}

// validateStream checks every document of one input.
func (v *validator) validateStream(r io.Reader) error {
	yr := utilyaml.NewYAMLReader(bufio.NewReader(r))
	for {
		doc, err := yr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if isEmptyDocument(doc) {
			continue
		}
		v.n++
		kind, name, err := v.validateDocument(doc)
		if err != nil {
			v.failed++
			fmt.Fprintf(v.out, "error: document %d (%s/%s): %v\n", v.n, orUnknown(kind), orUnknown(name), err)
		} else {
			fmt.Fprintf(v.out, "ok %s/%s\n", kind, name)
		}
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

// isEmptyDocument reports whether a document holds nothing but comments and
// whitespace (helm template prints "# Source:" lines and empty documents).
func isEmptyDocument(doc []byte) bool {
	for _, line := range bytes.Split(doc, []byte("\n")) {
		t := bytes.TrimSpace(line)
		if len(t) == 0 || t[0] == '#' || bytes.Equal(t, []byte("---")) || bytes.Equal(t, []byte("...")) {
			continue
		}
		return false
	}
	return true
}

func (v *validator) validateDocument(doc []byte) (kind, name string, err error) {
	h, err := readHeader(doc)
	if err != nil {
		return "", "", err
	}
	kind, name = h.Kind, h.Metadata.Name
	if h.APIVersion == "" {
		return kind, name, errors.New("apiVersion is missing")
	}
	if h.Kind == "" {
		return kind, name, errors.New("kind is missing")
	}
	gv, err := schema.ParseGroupVersion(h.APIVersion)
	if err != nil {
		return kind, name, fmt.Errorf("apiVersion %q: %v", h.APIVersion, err)
	}
	gvk := gv.WithKind(h.Kind)

	if !scheme.Scheme.Recognizes(gvk) {
		if !v.allowed[gvk] {
			return kind, name, fmt.Errorf("kind %q is not known for apiVersion %q (not in the Kubernetes scheme; pass --allow-kind %s to accept it unchecked)", h.Kind, h.APIVersion, gvkString(gvk))
		}
		if err := v.checkAllowed(doc); err != nil {
			return kind, name, err
		}
		return kind, name, v.checkDuplicate(gvk, h.Metadata.Namespace, h.Metadata.Name)
	}

	obj, _, err := v.decoder.Decode(doc, nil, nil)
	if err != nil {
		return kind, name, err
	}
	if err := v.checkServed(obj, gvk); err != nil {
		return kind, name, err
	}
	if err := semanticChecks(obj); err != nil {
		return kind, name, err
	}
	return kind, name, v.checkDuplicate(gvk, h.Metadata.Namespace, h.Metadata.Name)
}

// checkAllowed checks a kind outside the scheme: metadata must be a mapping
// whose name is a non-empty string.
func (v *validator) checkAllowed(doc []byte) error {
	var m map[string]interface{}
	if err := yaml.Unmarshal(doc, &m); err != nil {
		return err
	}
	md, ok := m["metadata"].(map[string]interface{})
	if !ok {
		return errors.New("metadata is missing or not a mapping")
	}
	n, ok := md["name"].(string)
	if !ok || n == "" {
		return errors.New("metadata.name is missing or empty")
	}
	return nil
}

func (v *validator) checkDuplicate(gvk schema.GroupVersionKind, namespace, name string) error {
	key := gvk.Group + "/" + gvk.Kind + "/" + namespace + "/" + name
	if prev, ok := v.seen[key]; ok {
		return fmt.Errorf("duplicate object: document %d has the same kind, namespace and metadata.name", prev)
	}
	v.seen[key] = v.n
	return nil
}

// semanticChecks runs the cheap checks the type system does not express.
func semanticChecks(obj runtime.Object) error {
	if acc, ok := obj.(metav1.Object); ok && acc.GetName() == "" {
		return errors.New("metadata.name is missing or empty")
	}

	var errs []string
	switch o := obj.(type) {
	case *appsv1.Deployment:
		errs = append(errs, selectorMatches(o.Spec.Selector, o.Spec.Template.Labels)...)
	case *appsv1.StatefulSet:
		errs = append(errs, selectorMatches(o.Spec.Selector, o.Spec.Template.Labels)...)
	case *appsv1.DaemonSet:
		errs = append(errs, selectorMatches(o.Spec.Selector, o.Spec.Template.Labels)...)
	case *appsv1.ReplicaSet:
		errs = append(errs, selectorMatches(o.Spec.Selector, o.Spec.Template.Labels)...)
	}
	if spec, path := podSpecOf(obj); spec != nil {
		errs = append(errs, checkPorts(spec, path)...)
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

func selectorMatches(sel *metav1.LabelSelector, tmplLabels map[string]string) []string {
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		return []string{"spec.selector is missing or empty"}
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return []string{fmt.Sprintf("spec.selector: %v", err)}
	}
	if !s.Matches(labels.Set(tmplLabels)) {
		return []string{fmt.Sprintf("spec.selector (%s) does not match spec.template.metadata.labels (%s)", s.String(), labels.Set(tmplLabels).String())}
	}
	return nil
}

// podSpecOf returns the pod spec an object carries and its field path.
func podSpecOf(obj runtime.Object) (*corev1.PodSpec, string) {
	switch o := obj.(type) {
	case *corev1.Pod:
		return &o.Spec, "spec"
	case *corev1.PodTemplate:
		return &o.Template.Spec, "template.spec"
	case *corev1.ReplicationController:
		if o.Spec.Template != nil {
			return &o.Spec.Template.Spec, "spec.template.spec"
		}
	case *appsv1.Deployment:
		return &o.Spec.Template.Spec, "spec.template.spec"
	case *appsv1.StatefulSet:
		return &o.Spec.Template.Spec, "spec.template.spec"
	case *appsv1.DaemonSet:
		return &o.Spec.Template.Spec, "spec.template.spec"
	case *appsv1.ReplicaSet:
		return &o.Spec.Template.Spec, "spec.template.spec"
	case *batchv1.Job:
		return &o.Spec.Template.Spec, "spec.template.spec"
	case *batchv1.CronJob:
		return &o.Spec.JobTemplate.Spec.Template.Spec, "spec.jobTemplate.spec.template.spec"
	}
	return nil, ""
}

func checkPorts(spec *corev1.PodSpec, path string) []string {
	var errs []string
	check := func(field string, cs []corev1.Container) {
		for i, c := range cs {
			for j, p := range c.Ports {
				if p.Name == "" {
					continue
				}
				for _, msg := range validation.IsValidPortName(p.Name) {
					errs = append(errs, fmt.Sprintf("%s.%s[%d].ports[%d].name %q: %s", path, field, i, j, p.Name, msg))
				}
			}
		}
	}
	check("initContainers", spec.InitContainers)
	check("containers", spec.Containers)
	return errs
}

// run is main without the process: it returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("k8svalidate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	allowed := kindList{}
	fs.Var(allowed, "allow-kind", "accept `GROUP/VERSION/KIND` outside the Kubernetes scheme, checking only apiVersion, kind and metadata.name (repeatable)")
	kubeVersion := fs.String("kube-version", defaultKubeVersion, "Kubernetes `MAJOR.MINOR` to check served API versions against")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: k8svalidate [--kube-version 1.37] [--allow-kind GROUP/VERSION/KIND]... [FILE|-]...")
		fmt.Fprintln(stderr, "Validates multi-document Kubernetes YAML (e.g. helm template output) from stdin or FILEs.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}

	v, err := newValidator(allowed, *kubeVersion, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "k8svalidate:", err)
		return 2
	}
	inputs := fs.Args()
	if len(inputs) == 0 {
		inputs = []string{"-"}
	}
	for _, in := range inputs {
		var err error
		if in == "-" {
			err = v.validateStream(stdin)
		} else {
			var f *os.File
			f, err = os.Open(in)
			if err == nil {
				err = v.validateStream(f)
				f.Close()
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "k8svalidate: reading %s: %v\n", in, err)
			return 2
		}
	}
	if v.n == 0 {
		fmt.Fprintln(stdout, "error: no documents in input")
		return 1
	}
	if v.failed > 0 {
		return 1
	}
	return 0
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
