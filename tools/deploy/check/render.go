package check

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Chart renders the chart at dir as `helm template` would (release "agentd", namespace
// "agentd", install) once with its default values and once with each ci/*.yaml values
// file over them, and decodes every rendered manifest. A value set that does not render
// is a Problem of KindRender; NOTES.txt and templates that render empty are skipped.
func Chart(dir string) ([]Manifest, []*Problem) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, []*Problem{{Source: dir, Kind: KindRender, Err: err}}
	}
	sets := []string{""}
	extra, _ := filepath.Glob(filepath.Join(dir, "ci", "*.yaml"))
	sets = append(sets, extra...)
	var out []Manifest
	var problems []*Problem
	for _, file := range sets {
		source, vals := "helm:default values", chartutil.Values{}
		if file != "" {
			source = "helm:ci/" + filepath.Base(file)
			if vals, err = chartutil.ReadValuesFile(file); err != nil {
				problems = append(problems, &Problem{Source: source, Kind: KindRender, Err: err})
				continue
			}
		}
		rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: "agentd", Namespace: "agentd", IsInstall: true, Revision: 1}, chartutil.DefaultCapabilities)
		if err != nil {
			problems = append(problems, &Problem{Source: source, Kind: KindRender, Err: err})
			continue
		}
		files, err := engine.Render(ch, rv)
		if err != nil {
			problems = append(problems, &Problem{Source: source, Kind: KindRender, Err: err})
			continue
		}
		rendered := 0
		for _, name := range slices.Sorted(maps.Keys(files)) {
			if strings.HasSuffix(name, "NOTES.txt") || isEmpty([]byte(files[name])) {
				continue
			}
			ms, ps := Decode(source+":"+strings.TrimPrefix(name, ch.Name()+"/"), []byte(files[name]))
			out, problems = append(out, ms...), append(problems, ps...)
			rendered += len(ms)
		}
		if rendered == 0 {
			problems = append(problems, &Problem{Source: source, Kind: KindRender, Err: fmt.Errorf("renders no manifest")})
		}
	}
	return out, problems
}

// kustomizations strictly decodes every kustomization.yaml under dir into kustomize's
// Kustomization type, builds it with kustomize's library (as `kubectl apply -k` does)
// and decodes what it builds.
func kustomizations(dir string) ([]Manifest, []*Problem) {
	var out []Manifest
	var problems []*Problem
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.Name() != "kustomization.yaml" {
			return err
		}
		source := rel(dir, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var k types.Kustomization
		if err := yaml.UnmarshalStrict(data, &k); err != nil {
			problems = append(problems, &Problem{Source: source, Kind: KindDecode, Err: err})
			return nil
		}
		rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Dir(p))
		if err != nil {
			problems = append(problems, &Problem{Source: source, Kind: KindRender, Err: err})
			return nil
		}
		built, err := rm.AsYaml()
		if err != nil {
			problems = append(problems, &Problem{Source: source, Kind: KindRender, Err: err})
			return nil
		}
		ms, ps := Decode("kustomize:"+filepath.ToSlash(filepath.Dir(source)), built)
		out, problems = append(out, ms...), append(problems, ps...)
		return nil
	})
	if err != nil {
		problems = append(problems, &Problem{Source: dir, Kind: KindIO, Err: err})
	}
	return out, problems
}
