package check

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// repoRoot is the agentd repository this module sits in (tools/deploy/check).
const repoRoot = "../../.."

// TestRepo_DeployFolderHasNoProblem is what make deploy-check runs: the chart, the
// kustomizations and every manifest of the repository pass.
func TestRepo_DeployFolderHasNoProblem(t *testing.T) {
	n, problems := Repo(repoRoot)
	for _, p := range problems {
		t.Error(p)
	}
	// Five base manifests (two Secrets) twice (files and kustomization), the overlay's
	// Redis pair twice and its build, and three chart renderings.
	if n < 20 {
		t.Errorf("only %d manifests decoded", n)
	}
}

const goodDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: agentd
spec:
  replicas: 1
  selector:
    matchLabels: {app: agentd}
  template:
    metadata:
      labels: {app: agentd}
    spec:
      securityContext:
        runAsNonRoot: true
        seccompProfile: {type: RuntimeDefault}
      containers:
        - name: agentd
          image: agentd:dev
          args: [serve, --config=/etc/agentd, --data-dir=/var/lib/agentd]
          readinessProbe: {httpGet: {path: /readyz, port: 8181}}
          livenessProbe: {httpGet: {path: /healthz, port: 8181}}
          resources:
            requests: {cpu: 100m}
            limits: {memory: 1Gi}
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities: {drop: [ALL]}
          volumeMounts:
            - {name: data, mountPath: /var/lib/agentd}
      volumes:
        - {name: data, emptyDir: {}}
`

// TestDecodeAndPolicy_KeyedOnKind: each broken manifest is reported with its kind.
func TestDecodeAndPolicy_KeyedOnKind(t *testing.T) {
	for _, tc := range []struct {
		name     string
		manifest string
		want     Kind // "" for no problem
	}{
		{"good", goodDeployment, ""},
		{"unknown field", strings.Replace(goodDeployment, "replicas: 1", "replicas: 1\n  replicaz: 2", 1), KindDecode},
		{"field in the wrong case", strings.Replace(goodDeployment, "replicas: 1", "Replicas: 1", 1), KindDecode},
		{"duplicate field", strings.Replace(goodDeployment, "replicas: 1", "replicas: 1\n  replicas: 2", 1), KindDecode},
		{"wrong type", strings.Replace(goodDeployment, "replicas: 1", "replicas: one", 1), KindDecode},
		{"unknown kind", strings.Replace(goodDeployment, "kind: Deployment", "kind: Deploymnet", 1), KindDecode},
		{"no readiness probe", strings.Replace(goodDeployment, "path: /readyz", "path: /healthz", 1), KindPolicy},
		{"no liveness probe", strings.Replace(goodDeployment, "path: /healthz", "path: /metrics", 1), KindPolicy},
		{"root allowed", strings.Replace(goodDeployment, "runAsNonRoot: true", "runAsNonRoot: false", 1), KindPolicy},
		{"writable root", strings.Replace(goodDeployment, "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false", 1), KindPolicy},
		{"capabilities kept", strings.Replace(goodDeployment, "drop: [ALL]", "drop: [NET_RAW]", 1), KindPolicy},
		{"unconfined seccomp", strings.Replace(goodDeployment, "type: RuntimeDefault", "type: Unconfined", 1), KindPolicy},
		{"privilege escalation", strings.Replace(goodDeployment, "allowPrivilegeEscalation: false", "allowPrivilegeEscalation: true", 1), KindPolicy},
		{"no memory limit", strings.Replace(goodDeployment, "limits: {memory: 1Gi}", "limits: {}", 1), KindPolicy},
		{"no state volume", strings.Replace(goodDeployment, "mountPath: /var/lib/agentd", "mountPath: /tmp", 1), KindPolicy},
		{"data directory left implicit", strings.Replace(goodDeployment, ", --data-dir=/var/lib/agentd", "", 1), KindPolicy},
		{"data directory elsewhere", strings.Replace(goodDeployment, "--data-dir=/var/lib/agentd", "--data-dir=/tmp/agentd", 1), KindPolicy},
		{"replicas without a shared store", strings.Replace(goodDeployment, "replicas: 1", "replicas: 2", 1), KindPolicy},
		{"replicas with Redis", strings.NewReplacer("replicas: 1", "replicas: 2", "--config=/etc/agentd", "--store=redis://redis:6379/0").Replace(goodDeployment), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms, problems := Decode("test.yaml", []byte(tc.manifest))
			for _, m := range ms {
				problems = append(problems, checkManifest(m)...)
			}
			switch {
			case tc.want == "" && len(problems) > 0:
				t.Fatalf("unexpected problems: %v", problems)
			case tc.want != "" && len(problems) == 0:
				t.Fatalf("no problem, want %s", tc.want)
			case tc.want != "" && KindOf(problems[0]) != tc.want:
				t.Fatalf("problem %v, want kind %s", problems[0], tc.want)
			}
		})
	}
}

func TestDecode_SkipsEmptyDocumentsAndReadsEveryOther(t *testing.T) {
	stream := "# a comment\n---\n" + goodDeployment + "---\n\n---\napiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 1}]}\n"
	ms, problems := Decode("s.yaml", []byte(stream))
	if len(problems) > 0 || len(ms) != 2 {
		t.Fatalf("%d manifests, problems %v", len(ms), problems)
	}
}

// TestConfigDrift_KeyedOnKind copies the repository's example and base manifests to a
// scratch tree, changes one thing and expects a drift problem.
func TestConfigDrift_KeyedOnKind(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, root string)
	}{
		{"example hook edited", func(t *testing.T, root string) {
			appendFile(t, filepath.Join(root, exampleDir, "hooks/10-context.yaml"), "# edited\n")
		}},
		{"example file added", func(t *testing.T, root string) {
			write(t, filepath.Join(root, exampleDir, "data/extra.json"), "{}\n")
		}},
		{"volume item missing", func(t *testing.T, root string) {
			p := filepath.Join(root, deploymentFile)
			data, _ := os.ReadFile(p)
			write(t, p, strings.Replace(string(data), "              - {key: hooks.20-plan.yaml, path: hooks/20-plan.yaml}\n", "", 1))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := scratchRepo(t)
			if ps := configDrift(root); len(ps) > 0 {
				t.Fatalf("the unchanged copy drifts: %v", ps)
			}
			tc.change(t, root)
			ps := configDrift(root)
			if len(ps) == 0 || KindOf(ps[0]) != KindDrift {
				t.Fatalf("problems %v, want a %s", ps, KindDrift)
			}
		})
	}
}

// TestWriteConfigMap_RepairsDrift: after an example edit, WriteConfigMap brings the
// ConfigMap back in step.
func TestWriteConfigMap_RepairsDrift(t *testing.T) {
	root := scratchRepo(t)
	appendFile(t, filepath.Join(root, exampleDir, "hooks/30-response.yaml"), "# edited\n")
	if err := WriteConfigMap(root); err != nil {
		t.Fatal(err)
	}
	if ps := configDrift(root); len(ps) > 0 {
		t.Fatalf("drift after WriteConfigMap: %v", ps)
	}
}

// scratchRepo copies the example config (symlinks resolved) and the base manifests.
func scratchRepo(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files, err := exampleConfig(filepath.Join(repoRoot, exampleDir))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		write(t, filepath.Join(root, exampleDir, name), data)
	}
	for _, f := range []string{configMapFile, deploymentFile} {
		data, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(root, f), string(data))
	}
	return root
}

func write(t *testing.T, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t *testing.T, p, data string) {
	t.Helper()
	old, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	write(t, p, string(old)+data)
}

// TestChart_ValuesKeyedOnKind renders a copy of the chart with one more ci values file.
func TestChart_ValuesKeyedOnKind(t *testing.T) {
	for _, tc := range []struct {
		name, values string
		want         Kind
	}{
		{"misspelt value", "replicaCnt: 2\n", KindRender},
		{"misspelt nested value", "tokens: {contents: x}\n", KindRender},
		{"store that is not Redis", "store: {redisURL: memory}\n", KindRender},
		{"replicas without a store", "replicaCount: 2\n", KindPolicy},
		{"probe moved off /readyz", "readinessProbe: {httpGet: {path: /metrics, port: http}}\n", KindPolicy},
		{"replicas with a store", "replicaCount: 2\nstore: {redisURL: 'redis://r:6379/0'}\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(filepath.Join(repoRoot, "deploy/helm/agentd"))); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(dir, "ci", "case-values.yaml"), tc.values)
			ms, problems := Chart(dir)
			for _, m := range ms {
				problems = append(problems, checkManifest(m)...)
			}
			switch {
			case tc.want == "" && len(problems) > 0:
				t.Fatalf("unexpected problems: %v", problems)
			case tc.want != "" && len(problems) == 0:
				t.Fatalf("no problem, want %s", tc.want)
			case tc.want != "" && KindOf(problems[0]) != tc.want:
				t.Fatalf("problem %v, want kind %s", problems[0], tc.want)
			}
		})
	}
}
