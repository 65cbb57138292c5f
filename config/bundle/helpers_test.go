package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentd-dev/agentd/config"
)

// example is the stock-agent example config.
const example = "../../examples/stock-agent"

// testKeys are a signing key file and its verification key, of one algorithm.
type testKeys struct {
	alg, private string
	public       []byte
}

// newKeys writes a fresh key of alg (RS256, ES256 or HS256) into a temp directory.
func newKeys(t testing.TB, alg string) testKeys {
	t.Helper()
	dir := t.TempDir()
	var priv, pub []byte
	switch alg {
	case "RS256":
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		priv = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
		pub = pemPublic(t, &k.PublicKey)
	case "ES256":
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		priv = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
		pub = pemPublic(t, &k.PublicKey)
	case "HS256":
		priv = []byte(rand.Text())
		pub = priv
	}
	path := filepath.Join(dir, "signing.key")
	if err := os.WriteFile(path, priv, 0o600); err != nil {
		t.Fatal(err)
	}
	return testKeys{alg: alg, private: path, public: pub}
}

func pemPublic(t testing.TB, k any) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// signing is the Build signing of k.
func (k testKeys) signing() *Signing { return &Signing{Key: k.private, Alg: k.alg} }

// openOptions verify under k.
func (k testKeys) openOptions(t testing.TB) OpenOptions {
	t.Helper()
	vc, err := VerificationKey(k.public, "")
	if err != nil {
		t.Fatal(err)
	}
	return OpenOptions{Verification: vc}
}

// build builds dir into a bundle.
func build(t testing.TB, dir string, opts BuildOptions) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := Build(&buf, dir, opts); err != nil {
		t.Fatalf("Build(%s): %v", dir, err)
	}
	return buf.Bytes()
}

// copyConfig writes the files of the config directory dir into a fresh directory.
func copyConfig(t testing.TB, dir string) string {
	t.Helper()
	files, err := config.ReadFiles(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := (&Archive{Files: files}).WriteDir(out); err != nil {
		t.Fatal(err)
	}
	return out
}

// entry is one raw tar entry of a rewritten bundle.
type entry struct {
	name     string
	typeflag byte
	data     []byte
}

// entries returns the entries of a bundle, in order.
func entries(t testing.TB, data []byte) []entry {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var out []entry
	for {
		hdr, err := tr.Next()
		if err != nil {
			return out
		}
		var b bytes.Buffer
		_, _ = b.ReadFrom(tr)
		out = append(out, entry{name: hdr.Name, typeflag: hdr.Typeflag, data: b.Bytes()})
	}
}

// pack writes entries as a gzipped tar, as they are (names and types unchecked).
func pack(t testing.TB, es []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range es {
		hdr := &tar.Header{Name: e.name, Typeflag: e.typeflag, Mode: 0o644, Size: int64(len(e.data))}
		if e.typeflag == tar.TypeSymlink {
			hdr.Linkname, hdr.Size = "/etc/passwd", 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if e.typeflag == tar.TypeReg {
			if _, err := tw.Write(e.data); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// rewrite returns data with its entries passed through edit.
func rewrite(t testing.TB, data []byte, edit func([]entry) []entry) []byte {
	t.Helper()
	return pack(t, edit(entries(t, data)))
}

// writeFileAtomic replaces path with data in one rename.
func writeFileAtomic(path string, data []byte) error {
	if err := os.WriteFile(path+".tmp", data, 0o644); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}
