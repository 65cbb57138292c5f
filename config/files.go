package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentd-dev/agentd/builtin"
	"github.com/agentd-dev/agentd/engine/diag"
)

// file is one loaded file, named by its slash path relative to the config directory.
type file struct {
	name string
	data []byte
}

// configFiles is everything a generation is compiled from.
type configFiles struct {
	hooks    []*builtin.Source
	policies []file
	data     []file
	tests    []file
}

// Directories of a config directory.
const (
	hooksDir    = "hooks"
	policiesDir = "policies"
	dataDir     = "data"
	testsDir    = "tests"
)

// readConfig reads the config directory. Sub-folders may be symlinks (the Kubernetes
// ConfigMap layout links them into a hidden, timestamped folder); entries whose name
// starts with "." are skipped.
func readConfig(dir string) (configFiles, diag.List) {
	var cf configFiles
	var errs diag.List
	read := func(sub string, recursive bool, keep func(string) bool) []file {
		files, err := readTree(dir, sub, recursive, keep)
		errs = append(errs, err...)
		return files
	}
	for _, f := range read(hooksDir, false, hasExt(".yaml", ".yml")) {
		cf.hooks = append(cf.hooks, builtin.NewSource(f.name, f.data))
	}
	cf.policies = read(policiesDir, true, func(n string) bool {
		return strings.HasSuffix(n, ".rego") && !strings.HasSuffix(n, "_test.rego")
	})
	cf.data = read(dataDir, true, hasExt(".json", ".yaml", ".yml"))
	cf.tests = read(testsDir, false, hasExt(".yaml", ".yml"))
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		errs = append(errs, &diag.Error{Kind: diag.KindIO, File: dir, Message: "config directory does not exist or is not a directory"})
	}
	return cf, errs
}

func hasExt(exts ...string) func(string) bool {
	return func(name string) bool { return slices.Contains(exts, path.Ext(name)) }
}

// readTree reads the files under dir/sub that keep accepts, sorted by name. A missing
// sub-folder is not an error.
func readTree(dir, sub string, recursive bool, keep func(string) bool) ([]file, diag.List) {
	root, err := filepath.EvalSymlinks(filepath.Join(dir, sub))
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, diag.List{{Kind: diag.KindIO, File: sub, Message: ioMessage(err)}}
	}
	var files []file
	var errs diag.List
	walkErr := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(root, p)
		name := path.Join(sub, filepath.ToSlash(rel))
		switch {
		case err != nil:
			errs = append(errs, &diag.Error{Kind: diag.KindIO, File: name, Message: ioMessage(err)})
			return nil
		case p == root:
			return nil
		case strings.HasPrefix(d.Name(), "."):
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		case d.IsDir():
			if !recursive {
				return filepath.SkipDir
			}
			return nil
		case !keep(name):
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			errs = append(errs, &diag.Error{Kind: diag.KindIO, File: name, Message: ioMessage(err)})
			return nil
		}
		files = append(files, file{name: name, data: data})
		return nil
	})
	if walkErr != nil {
		errs = append(errs, &diag.Error{Kind: diag.KindIO, File: sub, Message: ioMessage(walkErr)})
	}
	slices.SortFunc(files, func(a, b file) int { return strings.Compare(a.name, b.name) })
	return files, errs
}

// ioMessage is err's text without the absolute path an *fs.PathError repeats: the
// diagnostic's File names the file relative to the config directory.
func ioMessage(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Op + ": " + pe.Err.Error()
	}
	return err.Error()
}

// SourceFile is one file of a config directory, named by its slash path relative to
// the directory.
type SourceFile struct {
	Name string
	Data []byte
}

// ReadFiles returns every file Load reads from the config directory dir: the hooks,
// policies and data a generation is compiled from and, with tests, the pipeline test
// cases; in name order. It is what a bundle of the directory holds (see package
// config/bundle). A file that cannot be read is a diag.List error.
func ReadFiles(dir string, tests bool) ([]SourceFile, error) {
	cf, errs := readConfig(dir)
	if len(errs) > 0 {
		return nil, errs.Normalize(0)
	}
	var out []SourceFile
	for _, s := range cf.hooks {
		out = append(out, SourceFile{Name: s.Name, Data: s.Data})
	}
	groups := [][]file{cf.policies, cf.data}
	if tests {
		groups = append(groups, cf.tests)
	}
	for _, g := range groups {
		for _, f := range g {
			out = append(out, SourceFile{Name: f.name, Data: f.data})
		}
	}
	slices.SortFunc(out, func(a, b SourceFile) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// generationID hashes the names and contents of every file a generation is built
// from, in name order.
func (cf configFiles) generationID() (string, []string) {
	var all []file
	for _, s := range cf.hooks {
		all = append(all, file{name: s.Name, data: s.Data})
	}
	all = append(append(all, cf.policies...), cf.data...)
	slices.SortFunc(all, func(a, b file) int { return strings.Compare(a.name, b.name) })
	h := sha256.New()
	names := make([]string, len(all))
	for i, f := range all {
		names[i] = f.name
		fmt.Fprintf(h, "%s\x00%d\x00", f.name, len(f.data))
		h.Write(f.data)
	}
	return "g-" + hex.EncodeToString(h.Sum(nil))[:16], names
}
