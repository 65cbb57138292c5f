package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// layer collects the entries of one image layer. Entries are keyed by absolute slash
// path; the parent folders of every entry are added as root-owned 0755 folders unless
// added explicitly. The tar lists them in path order with the layer's time on each, so
// equal inputs give equal bytes.
type layer struct {
	time    time.Time
	entries map[string]*tar.Header
	data    map[string][]byte
}

func newLayer(t time.Time) *layer {
	return &layer{time: t, entries: map[string]*tar.Header{}, data: map[string][]byte{}}
}

// file adds a regular root-owned file.
func (l *layer) file(name string, mode int64, data []byte) {
	l.add(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data))})
	l.data[name] = data
}

// dir adds a folder owned by uid (user and group).
func (l *layer) dir(name string, mode int64, uid int) {
	l.add(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, Uid: uid, Gid: uid})
}

func (l *layer) add(h *tar.Header) {
	l.entries[h.Name] = h
	for p := path.Dir(h.Name); p != "/"; p = path.Dir(p) {
		if _, ok := l.entries[p]; !ok {
			l.entries[p] = &tar.Header{Typeflag: tar.TypeDir, Name: p, Mode: 0o755}
		}
	}
}

// copyTree adds the files under the folder src at dst, root-owned, 0644 (0755 for
// executables and folders). Symlinks are followed, so a link to a folder outside src
// (examples/stock-agent/policies) is copied as that folder; a link cycle is an error.
func (l *layer) copyTree(src, dst string) error {
	st, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("config directory: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("config directory %s is not a directory", src)
	}
	return l.copyDir(src, dst, nil)
}

func (l *layer) copyDir(src, dst string, seen []string) error {
	real, err := filepath.EvalSymlinks(src)
	if err != nil {
		return err
	}
	if slices.Contains(seen, real) {
		return fmt.Errorf("config directory: symlink cycle at %s", src)
	}
	seen = append(seen, real)
	l.dir(dst, 0o755, 0)
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		from, to := filepath.Join(src, e.Name()), path.Join(dst, e.Name())
		st, err := os.Stat(from)
		if err != nil {
			return fmt.Errorf("config directory: %w", err)
		}
		switch {
		case st.IsDir():
			if err := l.copyDir(from, to, seen); err != nil {
				return err
			}
		case st.Mode().IsRegular():
			data, err := os.ReadFile(from)
			if err != nil {
				return err
			}
			mode := int64(0o644)
			if st.Mode()&0o111 != 0 {
				mode = 0o755
			}
			l.file(to, mode, data)
		default:
			return fmt.Errorf("config directory: %s is neither a file nor a folder", from)
		}
	}
	return nil
}

// tarBytes is the layer's uncompressed tar.
func (l *layer) tarBytes() ([]byte, error) {
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	for _, n := range slices.Sorted(maps.Keys(l.entries)) {
		h := *l.entries[n]
		h.Name = strings.TrimPrefix(n, "/")
		if h.Typeflag == tar.TypeDir {
			h.Name += "/"
		}
		h.ModTime, h.Format = l.time, tar.FormatPAX
		if h.Uid == 0 {
			h.Uname, h.Gname = "root", "root"
		}
		if err := w.WriteHeader(&h); err != nil {
			return nil, err
		}
		if _, err := w.Write(l.data[n]); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// build returns the layer, gzip-compressed with the OCI layer media type.
func (l *layer) build() (v1.Layer, error) {
	b, err := l.tarBytes()
	if err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer))
}
