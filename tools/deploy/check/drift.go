package check

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// The example deploy/kubernetes carries as its ConfigMap, and the files that hold it.
const (
	exampleDir     = "examples/stock-agent"
	configMapFile  = "deploy/kubernetes/base/configmap.yaml"
	deploymentFile = "deploy/kubernetes/base/deployment.yaml"
)

// exampleConfig returns the files of the config directory dir that agentd's loader reads
// (hooks/*.yaml, policies/**/*.rego but tests, data/**/*.json and .yaml), by slash path,
// symlinks followed.
func exampleConfig(dir string) (map[string]string, error) {
	files := map[string]string{}
	for _, sub := range []string{"hooks", "policies", "data"} {
		root, err := filepath.EvalSymlinks(filepath.Join(dir, sub))
		if err != nil {
			return nil, err
		}
		err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			r, _ := filepath.Rel(root, p)
			name := path.Join(sub, filepath.ToSlash(r))
			ext := path.Ext(name)
			keep := map[string]bool{
				"hooks":    (ext == ".yaml" || ext == ".yml") && !strings.Contains(r, string(filepath.Separator)),
				"policies": ext == ".rego" && !strings.HasSuffix(name, "_test.rego"),
				"data":     ext == ".json" || ext == ".yaml" || ext == ".yml",
			}[sub]
			if !keep {
				return nil
			}
			data, err := os.ReadFile(p)
			files[name] = string(data)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return files, nil
}

// configKey is the ConfigMap key of a config file: its path with "/" as ".".
func configKey(name string) string { return strings.ReplaceAll(name, "/", ".") }

// configDrift checks that deploy/kubernetes/base/configmap.yaml holds exactly the example's
// config files and that the Deployment's config volume maps each key to its path.
func configDrift(root string) []*Problem {
	want, err := exampleConfig(filepath.Join(root, exampleDir))
	if err != nil {
		return []*Problem{{Source: exampleDir, Kind: KindIO, Err: err}}
	}
	var problems []*Problem
	drift := func(source, format string, args ...any) {
		problems = append(problems, &Problem{Source: source, Kind: KindDrift,
			Err: fmt.Errorf(format+" (regenerate: cd tools/deploy && go run ./cmd/deploy-check -root ../.. -write-configmap)", args...)})
	}
	cm, err := decodeOne[*corev1.ConfigMap](filepath.Join(root, configMapFile))
	if err != nil {
		return []*Problem{{Source: configMapFile, Kind: KindDrift, Err: err}}
	}
	wantData := map[string]string{}
	for name, data := range want {
		wantData[configKey(name)] = data
	}
	for _, k := range slices.Sorted(maps.Keys(wantData)) {
		if got, ok := cm.Data[k]; !ok || got != wantData[k] {
			drift(configMapFile, "key %s differs from %s", k, exampleDir)
		}
	}
	for k := range cm.Data {
		if _, ok := wantData[k]; !ok {
			drift(configMapFile, "key %s is not a file of %s", k, exampleDir)
		}
	}
	dep, err := decodeOne[*appsv1.Deployment](filepath.Join(root, deploymentFile))
	if err != nil {
		return append(problems, &Problem{Source: deploymentFile, Kind: KindDrift, Err: err})
	}
	items := map[string]string{}
	for _, v := range dep.Spec.Template.Spec.Volumes {
		if v.ConfigMap != nil && v.ConfigMap.Name == cm.Name {
			for _, it := range v.ConfigMap.Items {
				items[it.Key] = it.Path
			}
		}
	}
	for name := range want {
		if items[configKey(name)] != name {
			drift(deploymentFile, "the config volume does not map key %s to %s", configKey(name), name)
		}
	}
	if len(items) != len(want) {
		drift(deploymentFile, "the config volume maps %d keys, the example has %d files", len(items), len(want))
	}
	return problems
}

// decodeOne decodes the file's one manifest of type T.
func decodeOne[T any](file string) (T, error) {
	var zero T
	data, err := os.ReadFile(file)
	if err != nil {
		return zero, err
	}
	ms, ps := Decode(file, data)
	if len(ps) > 0 {
		return zero, ps[0]
	}
	for _, m := range ms {
		if o, ok := m.Object.(T); ok {
			return o, nil
		}
	}
	return zero, fmt.Errorf("%s holds no %T", file, zero)
}

// WriteConfigMap writes deploy/kubernetes/base/configmap.yaml from examples/stock-agent, each
// file a literal block under its key.
func WriteConfigMap(root string) error {
	files, err := exampleConfig(filepath.Join(root, exampleDir))
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString(`# The config of examples/stock-agent, one key per file (a key is the file's path with
# "/" as "."; the Deployment's config volume maps each key back to its path). Replace it
# with your own; ` + "`make deploy-check`" + ` fails when this copy drifts from the example.
apiVersion: v1
kind: ConfigMap
metadata:
  name: agentd-config
data:
`)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		data := files[name]
		if !strings.HasSuffix(data, "\n") || strings.HasSuffix(data, "\n\n") || strings.HasPrefix(data, " ") {
			return fmt.Errorf("%s: a file must end in exactly one newline and not start with a space to be a literal block", name)
		}
		fmt.Fprintf(&b, "  %s: |\n", configKey(name))
		for _, line := range strings.Split(strings.TrimSuffix(data, "\n"), "\n") {
			if line != "" {
				b.WriteString("    " + line)
			}
			b.WriteString("\n")
		}
	}
	return os.WriteFile(filepath.Join(root, configMapFile), []byte(b.String()), 0o644)
}
