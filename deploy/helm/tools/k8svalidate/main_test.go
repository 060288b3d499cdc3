package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const validDeployment = `# Source: taskring/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: taskring
  labels:
    app.kubernetes.io/name: taskring
spec:
  replicas: 3
  selector:
    matchLabels:
      app.kubernetes.io/name: taskring
  template:
    metadata:
      labels:
        app.kubernetes.io/name: taskring
        app.kubernetes.io/instance: rel
    spec:
      containers:
        - name: node
          image: taskring:1.0
          ports:
            - name: grpc
              containerPort: 7000
            - name: metrics
              containerPort: 9100
          readinessProbe:
            grpc:
              port: 7000
`

const validService = `apiVersion: v1
kind: Service
metadata:
  name: taskring
spec:
  selector:
    app.kubernetes.io/name: taskring
  ports:
    - name: grpc
      port: 7000
      targetPort: grpc
`

const serviceMonitor = `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: taskring
spec:
  selector:
    matchLabels:
      app.kubernetes.io/name: taskring
  endpoints:
    - port: metrics
`

func runValidate(t *testing.T, input string, args ...string) (string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, strings.NewReader(input), &out, &errOut)
	if errOut.Len() > 0 {
		t.Logf("stderr: %s", errOut.String())
	}
	return out.String(), code
}

func expectError(t *testing.T, out string, code int, wants ...string) {
	t.Helper()
	if code != 1 {
		t.Errorf("exit code = %d, want 1; output:\n%s", code, out)
	}
	if !strings.Contains(out, "error: document ") {
		t.Errorf("output has no error line:\n%s", out)
	}
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("output does not contain %q:\n%s", w, out)
		}
	}
}

func TestValidDeploymentPasses(t *testing.T) {
	out, code := runValidate(t, validDeployment)
	if code != 0 || out != "ok Deployment/taskring\n" {
		t.Fatalf("code=%d out=%q", code, out)
	}
}

func TestHelmTemplateStreamPasses(t *testing.T) {
	// helm template starts with "---" and separates documents with
	// "---\n# Source: ..." lines; empty documents are skipped.
	in := "---\n" + validDeployment + "---\n# Source: taskring/templates/service.yaml\n" + validService + "---\n# Source: empty.yaml\n"
	out, code := runValidate(t, in)
	if code != 0 || out != "ok Deployment/taskring\nok Service/taskring\n" {
		t.Fatalf("code=%d out=%q", code, out)
	}
}

func TestUnknownFieldFailsNamingIt(t *testing.T) {
	in := strings.Replace(validDeployment, "  replicas: 3", "  replicaz: 3", 1)
	out, code := runValidate(t, in)
	expectError(t, out, code, "document 1 (Deployment/taskring)", "spec.replicaz")
}

func TestStringForIntFails(t *testing.T) {
	in := strings.Replace(validDeployment, "  replicas: 3", `  replicas: "3"`, 1)
	out, code := runValidate(t, in)
	expectError(t, out, code, "document 1 (Deployment/taskring)", "replicas")
}

func TestUnknownKindFails(t *testing.T) {
	in := strings.Replace(validDeployment, "kind: Deployment", "kind: Deploymint", 1)
	out, code := runValidate(t, in)
	expectError(t, out, code, "Deploymint")
}

func TestMissingKindFails(t *testing.T) {
	in := strings.Replace(validDeployment, "kind: Deployment\n", "", 1)
	out, code := runValidate(t, in)
	expectError(t, out, code, "kind is missing")
}

func TestRemovedAPIVersionFails(t *testing.T) {
	in := strings.Replace(validDeployment, "apiVersion: apps/v1", "apiVersion: extensions/v1beta1", 1)
	out, code := runValidate(t, in)
	expectError(t, out, code, "extensions/v1beta1", "1.16", "use apps/v1 Deployment")

	// batch/v1beta1 CronJob went in 1.25: fine for 1.24, an error for 1.25.
	cron := `apiVersion: batch/v1beta1
kind: CronJob
metadata:
  name: sweep
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers:
            - name: sweep
              image: taskring:1.0
`
	out, code = runValidate(t, cron, "--kube-version", "1.24")
	if code != 0 {
		t.Errorf("1.24: code=%d out=%q", code, out)
	}
	out, code = runValidate(t, cron, "--kube-version", "1.25")
	expectError(t, out, code, "batch/v1beta1")
}

func TestServiceMonitorNeedsAllowKind(t *testing.T) {
	out, code := runValidate(t, serviceMonitor)
	expectError(t, out, code, "ServiceMonitor", "--allow-kind monitoring.coreos.com/v1/ServiceMonitor")

	out, code = runValidate(t, serviceMonitor, "--allow-kind", "monitoring.coreos.com/v1/ServiceMonitor")
	if code != 0 || out != "ok ServiceMonitor/taskring\n" {
		t.Fatalf("with --allow-kind: code=%d out=%q", code, out)
	}

	// Allowing another kind does not allow this one.
	out, code = runValidate(t, serviceMonitor, "--allow-kind", "monitoring.coreos.com/v1/PrometheusRule")
	expectError(t, out, code, "ServiceMonitor")

	// An allowed kind still needs metadata.name.
	noName := strings.Replace(serviceMonitor, "  name: taskring\n", "  labels: {a: b}\n", 1)
	out, code = runValidate(t, noName, "--allow-kind", "monitoring.coreos.com/v1/ServiceMonitor")
	expectError(t, out, code, "metadata.name")
}

func TestSelectorMustMatchTemplateLabels(t *testing.T) {
	in := strings.Replace(validDeployment, "      app.kubernetes.io/name: taskring\n  template:", "      app.kubernetes.io/name: other\n  template:", 1)
	out, code := runValidate(t, in)
	expectError(t, out, code, "spec.selector")
}

func TestLongPortNameFails(t *testing.T) {
	in := strings.Replace(validDeployment, "name: metrics", "name: prometheus-metrics", 1)
	out, code := runValidate(t, in)
	expectError(t, out, code, "spec.template.spec.containers[0].ports[1].name")
}

func TestEmptyNameFails(t *testing.T) {
	in := strings.Replace(validService, "  name: taskring\n", "  name: \"\"\n", 1)
	out, code := runValidate(t, in)
	expectError(t, out, code, "metadata.name")
}

func TestDuplicateObjectFails(t *testing.T) {
	out, code := runValidate(t, validService+"---\n"+validService)
	expectError(t, out, code, "document 2 (Service/taskring)", "duplicate")
}

func TestOneBadDocumentAmongGoodOnes(t *testing.T) {
	bad := strings.Replace(validService, "port: 7000", "port: seven", 1)
	out, code := runValidate(t, validDeployment+"---\n"+bad)
	expectError(t, out, code, "ok Deployment/taskring\n", "error: document 2 (Service/taskring)", "port")
}

func TestFileArguments(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.yaml")
	b := filepath.Join(dir, "b.yaml")
	if err := os.WriteFile(a, []byte(validDeployment), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte(serviceMonitor), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := runValidate(t, "", "--allow-kind", "monitoring.coreos.com/v1/ServiceMonitor", a, b)
	if code != 0 || out != "ok Deployment/taskring\nok ServiceMonitor/taskring\n" {
		t.Fatalf("code=%d out=%q", code, out)
	}
}

func TestNoDocumentsFails(t *testing.T) {
	_, code := runValidate(t, "# nothing\n---\n")
	if code != 1 {
		t.Fatalf("code=%d, want 1", code)
	}
}
