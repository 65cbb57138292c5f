package bundle

import (
	"bytes"
	"errors"
	"io/fs"
	"strings"
	"testing"
)

// FuzzOpen feeds Open arbitrary archives (seeded with a real bundle and rewrites of
// it): it never panics, every failure is an *Error with a kind, and every accepted
// file name is a valid relative path that a later WriteDir keeps inside its directory.
func FuzzOpen(f *testing.F) {
	valid := build(f, example, BuildOptions{Revision: "v1"})
	f.Add(valid)
	f.Add(valid[:len(valid)/2])
	f.Add(pack(f, []entry{{name: "/.manifest", typeflag: '0', data: []byte(`{"revision":"x y"}`)}, {name: "../a", typeflag: '0', data: []byte("a")}}))
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := Open(bytes.NewReader(data), OpenOptions{MaxBytes: 1 << 20})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Kind == "" || a != nil {
				t.Fatalf("Open error %v (%T), archive %v", err, err, a)
			}
			return
		}
		for _, f := range a.Files {
			if !fs.ValidPath(f.Name) || strings.HasPrefix(f.Name, ".") && (f.Name == ManifestFile || f.Name == SignaturesFile) {
				t.Fatalf("accepted file name %q", f.Name)
			}
		}
		if a.Revision != "" && CheckRevision(a.Revision) != nil {
			t.Fatalf("accepted revision %q", a.Revision)
		}
	})
}
