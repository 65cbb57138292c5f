// Package check is what `make deploy-check` runs over the repository's deploy/ folder.
// It renders the Helm chart deploy/helm/agentd with Helm's own engine (helm.sh/helm/v3,
// no helm binary) for its default values and for each values file in its ci/ folder,
// builds every kustomization under deploy/kubernetes with kustomize's own library, and
// decodes every resulting manifest, and every YAML file under deploy/kubernetes as it
// stands, into the Kubernetes API types with the API machinery's strict decoder: an
// unknown or duplicated field, a wrong type or an unknown kind is an error. On the
// decoded objects it then checks what agentd's deployment promises (see checkPod) and
// that deploy/kubernetes/base/configmap.yaml is still the config of examples/stock-agent.
//
// Every finding is a *Problem with a Kind; Repo returns all of them, not the first.
package check

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
)

// Kind is the class of a Problem.
type Kind string

// The kinds of Problem.
const (
	// KindIO: a file or folder could not be read.
	KindIO Kind = "io"
	// KindDecode: a manifest does not decode strictly into its Kubernetes type.
	KindDecode Kind = "decode"
	// KindRender: the chart or a kustomization does not render.
	KindRender Kind = "render"
	// KindPolicy: a decoded agentd workload breaks a promise of the deployment (probes,
	// security context, resources, state volume).
	KindPolicy Kind = "policy"
	// KindDrift: the ConfigMap's copy of the example config differs from the example.
	KindDrift Kind = "drift"
)

// Problem is one finding: where (a file, or a rendering such as "helm:ci/full-values.yaml",
// and the manifest in it), its kind and what is wrong.
type Problem struct {
	Source string // file or rendering
	Object string // Kind/name of the manifest, when known
	Kind   Kind
	Err    error
}

func (p *Problem) Error() string {
	if p.Object != "" {
		return fmt.Sprintf("%s: %s: %s: %v", p.Source, p.Object, p.Kind, p.Err)
	}
	return fmt.Sprintf("%s: %s: %v", p.Source, p.Kind, p.Err)
}

func (p *Problem) Unwrap() error { return p.Err }

// KindOf is the Kind of err's first *Problem, or "" when it holds none.
func KindOf(err error) Kind {
	var p *Problem
	if errors.As(err, &p) {
		return p.Kind
	}
	return ""
}

// decoder decodes YAML and JSON manifests of every built-in Kubernetes kind strictly.
var decoder = serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()

// Manifest is one decoded manifest.
type Manifest struct {
	Source string
	Object runtime.Object
}

// name is Kind/name of m.
func (m Manifest) name() string {
	gvk := m.Object.GetObjectKind().GroupVersionKind()
	if o, ok := m.Object.(interface{ GetName() string }); ok {
		return gvk.Kind + "/" + o.GetName()
	}
	return gvk.Kind
}

// Decode splits data, the YAML stream of source, into documents and decodes each
// non-empty one strictly. It returns the manifests that decoded and a Problem of
// KindDecode for each that did not.
func Decode(source string, data []byte) ([]Manifest, []*Problem) {
	var out []Manifest
	var problems []*Problem
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for n := 1; ; n++ {
		doc, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			problems = append(problems, &Problem{Source: source, Kind: KindDecode, Err: err})
			break
		}
		if isEmpty(doc) {
			continue
		}
		obj, gvk, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			what := fmt.Sprintf("document %d", n)
			if gvk != nil && gvk.Kind != "" {
				what = gvk.Kind
			}
			problems = append(problems, &Problem{Source: source, Object: what, Kind: KindDecode, Err: err})
			continue
		}
		out = append(out, Manifest{Source: source, Object: obj})
	}
	return out, problems
}

// isEmpty reports whether a YAML document holds only comments and blank lines.
func isEmpty(doc []byte) bool {
	for _, line := range strings.Split(string(doc), "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") && l != "---" {
			return false
		}
	}
	return true
}

// Repo checks the deploy/ folder of the repository at root and returns every problem,
// sorted by source, and the number of manifests it decoded.
func Repo(root string) (int, []*Problem) {
	var all []Manifest
	var problems []*Problem
	add := func(ms []Manifest, ps []*Problem) {
		all = append(all, ms...)
		problems = append(problems, ps...)
	}
	kube := filepath.Join(root, "deploy", "kubernetes")
	add(kubernetesFiles(kube))
	add(kustomizations(kube))
	add(Chart(filepath.Join(root, "deploy", "helm", "agentd")))
	for _, m := range all {
		problems = append(problems, checkManifest(m)...)
	}
	problems = append(problems, configDrift(root)...)
	slices.SortStableFunc(problems, func(a, b *Problem) int { return strings.Compare(a.Source, b.Source) })
	return len(all), problems
}

// kubernetesFiles decodes every YAML file under dir but kustomization.yaml (a kustomize
// file, decoded by kustomizations) and strategic-merge patches (decoded, then checked
// only as the kustomization's output).
func kubernetesFiles(dir string) ([]Manifest, []*Problem) {
	var out []Manifest
	var problems []*Problem
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) || d.Name() == "kustomization.yaml" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		ms, ps := Decode(rel(dir, p), data)
		if strings.HasSuffix(d.Name(), "-patch.yaml") {
			ms = nil
		}
		out, problems = append(out, ms...), append(problems, ps...)
		return nil
	})
	if err != nil {
		problems = append(problems, &Problem{Source: dir, Kind: KindIO, Err: err})
	}
	return out, problems
}

// rel is p relative to dir's parent's parent (the repository root for deploy/kubernetes),
// or p when that fails.
func rel(dir, p string) string {
	if r, err := filepath.Rel(filepath.Dir(filepath.Dir(dir)), p); err == nil {
		return filepath.ToSlash(r)
	}
	return p
}
