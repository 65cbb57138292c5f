package bundle

import (
	"archive/tar"
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	opabundle "github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/util"

	"github.com/agentd-dev/agentd/config"
)

// Names of a bundle's own files.
const (
	ManifestFile   = ".manifest"
	SignaturesFile = ".signatures.json"
)

// DefaultKeyID is the key id a bundle is signed and verified under when none is
// given: the one OPA's command line uses (opa build --verification-key-id).
const DefaultKeyID = "default"

// BuildOptions configure Build.
type BuildOptions struct {
	// Revision is the manifest's revision; "" means the generation's content hash, so
	// a bundle of unchanged files has an unchanged revision.
	Revision string
	// Tests adds the tests/ folder (pipeline test cases, not part of a generation).
	Tests bool
	// Signing signs the bundle; nil writes it unsigned.
	Signing *Signing
}

// Signing is how Build signs: as OPA's opa build --signing-key, --signing-alg and
// --claims-file read them.
type Signing struct {
	// Key is a PEM private key (RS256, ES256) or the shared secret (HS256), or the
	// path of a file that holds it.
	Key string
	// Alg is RS256 (the default), ES256 or HS256; OPA's other JWS algorithms work too.
	Alg string
	// ClaimsFile is a JSON file of further JWT claims (such as scope); "" adds none.
	ClaimsFile string
	// KeyID is the kid of the JWT header; "" means DefaultKeyID.
	KeyID string
}

// Manifest is what Build wrote: the manifest's revision and roots and every file,
// .manifest and .signatures.json included, in tar order.
type Manifest struct {
	Revision string   `json:"revision"`
	Roots    []string `json:"roots"`
	Files    []string `json:"files"`
	Signed   bool     `json:"signed"`
}

// Build compiles the config directory dir and writes it to w as a bundle. A directory
// that does not compile is not written: the error is config.Load's diag.List. The
// bundle's bytes depend only on the files, the revision and the signature (the tar
// entries carry no times or owners), so building twice gives the same archive when
// unsigned. The manifest's roots are the first path segment of every policy package
// and data mount, so OPA accepts the bundle beside others with other roots.
func Build(w io.Writer, dir string, opts BuildOptions) (Manifest, error) {
	gen, err := config.Load(dir, config.Options{})
	if err != nil {
		return Manifest{}, err
	}
	files, err := config.ReadFiles(dir, opts.Tests)
	if err != nil {
		return Manifest{}, err
	}
	revision := opts.Revision
	if revision == "" {
		revision = gen.Digest
	}
	if err := CheckRevision(revision); err != nil {
		return Manifest{}, err
	}
	roots, err := rootsOf(files, gen.DataMounts)
	if err != nil {
		return Manifest{}, err
	}
	manifest, err := json.Marshal(opabundle.Manifest{Revision: revision, Roots: &roots})
	if err != nil {
		return Manifest{}, err
	}
	entries := append([]config.SourceFile{{Name: ManifestFile, Data: manifest}}, files...)
	if opts.Signing != nil {
		sig, err := sign(entries, opts.Signing)
		if err != nil {
			return Manifest{}, err
		}
		entries = append([]config.SourceFile{{Name: SignaturesFile, Data: sig}}, entries...)
	}
	if err := writeTarGz(w, entries); err != nil {
		return Manifest{}, err
	}
	out := Manifest{Revision: revision, Roots: roots, Signed: opts.Signing != nil}
	for _, e := range entries {
		out.Files = append(out.Files, e.Name)
	}
	return out, nil
}

// rootsOf returns the manifest roots of files: the first segment of every policy's
// package and data mount path, and "data" when a file OPA reads as a data document
// (data.json, data.yaml) sits under data/, since OPA mounts it at its folder's path.
// A document mounted at the root of data makes the one root "" (everything).
func rootsOf(files []config.SourceFile, mounts []config.DataMount) ([]string, error) {
	var roots []string
	for _, f := range files {
		switch {
		case strings.HasPrefix(f.Name, "policies/"):
			m, err := ast.ParseModuleWithOpts(f.Name, string(f.Data), ast.ParserOptions{RegoVersion: ast.RegoV1})
			if err != nil {
				return nil, err
			}
			roots = append(roots, string(m.Package.Path[1].Value.(ast.String)))
		case strings.HasPrefix(f.Name, "data/") && opabundle.IsStructuredDoc(f.Name):
			roots = append(roots, "data")
		}
	}
	for _, m := range mounts {
		first, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(m.Path, "data"), "."), ".")
		roots = append(roots, first)
	}
	slices.Sort(roots)
	roots = slices.Compact(roots)
	if len(roots) == 0 || roots[0] == "" {
		return []string{""}, nil
	}
	return roots, nil
}

// sign returns the .signatures.json of entries: one JWT over the hash of each.
func sign(entries []config.SourceFile, s *Signing) ([]byte, error) {
	infos := make([]opabundle.FileInfo, 0, len(entries))
	for _, e := range entries {
		fi, err := hashFile(e.Name, e.Data)
		if err != nil {
			return nil, fail(KindSigningFailed, e.Name, err)
		}
		infos = append(infos, fi)
	}
	alg := s.Alg
	if alg == "" {
		alg = "RS256"
	}
	keyID := s.KeyID
	if keyID == "" {
		keyID = DefaultKeyID
	}
	token, err := opabundle.GenerateSignedToken(infos, opabundle.NewSigningConfig(s.Key, alg, s.ClaimsFile), keyID)
	if err != nil {
		return nil, fail(KindSigningFailed, "", err)
	}
	return json.MarshalIndent(opabundle.SignaturesConfig{Signatures: []string{token}}, "", " ")
}

// hashFile is the signature entry of one file, hashed as OPA's verifier hashes it:
// a structured document over its parsed value, anything else over its bytes.
func hashFile(name string, data []byte) (opabundle.FileInfo, error) {
	h, err := opabundle.NewSignatureHasher(opabundle.SHA256)
	if err != nil {
		return opabundle.FileInfo{}, err
	}
	var v any = data
	if opabundle.IsStructuredDoc(name) {
		if err := util.Unmarshal(data, &v); err != nil {
			return opabundle.FileInfo{}, err
		}
	}
	sum, err := h.HashFile(v)
	if err != nil {
		return opabundle.FileInfo{}, err
	}
	return opabundle.NewFile(name, hex.EncodeToString(sum), string(opabundle.SHA256)), nil
}

// writeTarGz writes entries as a gzipped tar of regular files, mode 0644, with no
// times or owners.
func writeTarGz(w io.Writer, entries []config.SourceFile) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: "/" + path.Clean(e.Name), Mode: 0o644, Size: int64(len(e.Data)), Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(e.Data); err != nil {
			return err
		}
	}
	return errors.Join(tw.Close(), gz.Close())
}
