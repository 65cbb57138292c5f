package bundle

import (
	"archive/tar"
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	opabundle "github.com/open-policy-agent/opa/v1/bundle"

	"github.com/agentd-dev/agentd/config"
)

// DefaultMaxBytes bounds a bundle's uncompressed size when OpenOptions.MaxBytes is 0.
const DefaultMaxBytes = 64 << 20

// maxFiles bounds the files of one bundle.
const maxFiles = 10000

// OpenOptions configure Open. The zero value opens unsigned bundles only.
type OpenOptions struct {
	// Verification is the key a bundle's signature must verify under (see
	// VerificationKey). With it, an unsigned bundle is refused; without it, a signed
	// bundle is refused, as OPA refuses one it has no key for.
	Verification *opabundle.VerificationConfig
	// MaxBytes bounds the bundle's uncompressed size; 0 means DefaultMaxBytes.
	MaxBytes int64
}

// Archive is an opened, verified bundle.
type Archive struct {
	// Revision is the manifest's revision, "" when the bundle has no manifest or the
	// manifest none.
	Revision string
	Roots    []string
	// Files are the config's files, in name order: everything but .manifest and
	// .signatures.json.
	Files  []config.SourceFile
	Signed bool
}

// Open reads a gzipped tar bundle from r and verifies it. Every file must be a regular
// file with a relative name that stays inside the bundle and occurs once. When the
// bundle is signed, the JWT must verify under opts.Verification and list exactly the
// bundle's files, each with its hash (OPA's rules: see the package doc); the error
// then names the first file that fails. Errors are *Error, keyed by Kind.
func Open(r io.Reader, opts OpenOptions) (*Archive, error) {
	files, err := readTarGz(r, cmp.Or(max(opts.MaxBytes, 0), DefaultMaxBytes))
	if err != nil {
		return nil, err
	}
	sig, signed := files[SignaturesFile]
	delete(files, SignaturesFile)
	switch {
	case signed && opts.Verification == nil:
		return nil, &Error{Kind: KindNoKey, File: SignaturesFile, Message: "the bundle is signed and no verification key is set"}
	case !signed && opts.Verification != nil:
		return nil, &Error{Kind: KindUnsigned, Message: "the bundle has no " + SignaturesFile + " and a verification key is set: unsigned bundles are refused"}
	case signed:
		if err := verify(sig, files, opts.Verification); err != nil {
			return nil, err
		}
	}
	a := &Archive{Signed: signed}
	if data, ok := files[ManifestFile]; ok {
		var m opabundle.Manifest
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, fail(KindManifest, ManifestFile, err)
		}
		if m.Revision != "" {
			if err := CheckRevision(m.Revision); err != nil {
				return nil, err
			}
		}
		a.Revision = m.Revision
		if m.Roots != nil {
			a.Roots = *m.Roots
		}
		delete(files, ManifestFile)
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		a.Files = append(a.Files, config.SourceFile{Name: name, Data: files[name]})
	}
	return a, nil
}

// verify checks the .signatures.json sig against files with OPA's verifier.
func verify(sig []byte, files map[string][]byte, vc *opabundle.VerificationConfig) error {
	var sc opabundle.SignaturesConfig
	if err := json.Unmarshal(sig, &sc); err != nil {
		return fail(KindSignature, SignaturesFile, err)
	}
	signedFiles, err := opabundle.VerifyBundleSignature(sc, vc)
	if err != nil {
		return fail(KindSignature, SignaturesFile, err)
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if _, ok := signedFiles[name]; !ok {
			return &Error{Kind: KindFileNotSigned, File: name, Message: "the signature does not list this file"}
		}
		if err := opabundle.VerifyBundleFile(name, *bytes.NewBuffer(files[name]), signedFiles); err != nil {
			return &Error{Kind: KindDigest, File: name, Message: "the file's hash is not the signed one", Err: err}
		}
	}
	if len(signedFiles) > 0 {
		missing := slices.Sorted(maps.Keys(signedFiles))
		return &Error{Kind: KindFileMissing, File: missing[0], Message: fmt.Sprintf("the signature lists %d file(s) the bundle lacks: %s", len(missing), strings.Join(missing, ", "))}
	}
	return nil
}

// readTarGz reads the regular files of a gzipped tar, at most maxBytes uncompressed.
func readTarGz(r io.Reader, maxBytes int64) (map[string][]byte, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, fail(KindUnreadable, "", err)
	}
	defer gz.Close()
	limited := &io.LimitedReader{R: gz, N: maxBytes + 1}
	tr := tar.NewReader(limited)
	files := map[string][]byte{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fail(KindUnreadable, "", err)
		}
		if hdr.Typeflag == tar.TypeDir {
			continue
		}
		name := path.Clean(strings.TrimPrefix(hdr.Name, "/"))
		switch {
		case hdr.Typeflag != tar.TypeReg:
			return nil, &Error{Kind: KindUnsafePath, File: hdr.Name, Message: "not a regular file (links and devices are refused)"}
		case !fs.ValidPath(name) || name == ".":
			return nil, &Error{Kind: KindUnsafePath, File: hdr.Name, Message: "the name leaves the bundle"}
		case files[name] != nil:
			return nil, &Error{Kind: KindUnsafePath, File: name, Message: "the name occurs twice"}
		case len(files) == maxFiles:
			return nil, &Error{Kind: KindUnreadable, Message: fmt.Sprintf("more than %d files", maxFiles)}
		}
		data, err := io.ReadAll(tr)
		if err == nil && limited.N <= 0 {
			err = fmt.Errorf("larger than %d bytes uncompressed", maxBytes)
		}
		if err != nil {
			return nil, fail(KindUnreadable, name, err)
		}
		files[name] = data
	}
	if limited.N <= 0 {
		return nil, fail(KindUnreadable, "", fmt.Errorf("larger than %d bytes uncompressed", maxBytes))
	}
	return files, nil
}

// WriteDir writes the archive's files into dir, which must be empty or absent, under
// their bundle names: the config directory the bundle was built from.
func (a *Archive) WriteDir(dir string) error {
	for _, f := range a.Files {
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return err
		}
	}
	return os.MkdirAll(dir, 0o755)
}

// CheckRevision accepts a revision that can be a generation id: 1 to 128 ASCII
// letters, digits and . _ - : + characters.
func CheckRevision(rev string) error {
	ok := rev != "" && len(rev) <= 128 && !strings.ContainsFunc(rev, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._-:+", c))
	})
	if !ok {
		return &Error{Kind: KindManifest, File: ManifestFile, Message: fmt.Sprintf("revision %q: want 1 to 128 letters, digits and . _ - : +", rev)}
	}
	return nil
}
