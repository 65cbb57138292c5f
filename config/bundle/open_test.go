package bundle

import (
	"archive/tar"
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/agentd-dev/agentd/config"
)

func TestBuildOpen_RoundTripsEverySigningAlgorithm(t *testing.T) {
	want, err := config.ReadFiles(example, false)
	if err != nil {
		t.Fatal(err)
	}
	gen, err := config.Load(example, config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, alg := range []string{"RS256", "ES256", "HS256"} {
		t.Run(alg, func(t *testing.T) {
			k := newKeys(t, alg)
			a, err := Open(bytes.NewReader(build(t, example, BuildOptions{Signing: k.signing()})), k.openOptions(t))
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if !a.Signed || a.Revision != gen.Digest {
				t.Errorf("signed %v revision %q, want signed, revision %q (the content hash)", a.Signed, a.Revision, gen.Digest)
			}
			if !slices.Equal(a.Roots, []string{"agentd"}) {
				t.Errorf("roots %q, want [agentd]", a.Roots)
			}
			if !slices.EqualFunc(a.Files, want, func(a, b config.SourceFile) bool { return a.Name == b.Name && bytes.Equal(a.Data, b.Data) }) {
				t.Errorf("files differ from the directory's")
			}
		})
	}
}

func TestBuild_UnsignedIsReproducibleAndOpensWithoutKey(t *testing.T) {
	a, b := build(t, example, BuildOptions{Revision: "v1"}), build(t, example, BuildOptions{Revision: "v1"})
	if !bytes.Equal(a, b) {
		t.Error("two builds of one directory differ")
	}
	got, err := Open(bytes.NewReader(a), OpenOptions{})
	if err != nil || got.Revision != "v1" || got.Signed {
		t.Fatalf("Open = %+v, %v; want revision v1, unsigned", got, err)
	}
}

func TestBuild_RefusesAConfigThatDoesNotCompile(t *testing.T) {
	dir := copyConfig(t, example)
	if err := (&Archive{Files: []config.SourceFile{{Name: "hooks/10-context.yaml", Data: []byte("hooks: [")}}}).WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := Build(&buf, dir, BuildOptions{}); err == nil || buf.Len() > 0 {
		t.Fatalf("Build of a broken config: err %v, %d bytes written", err, buf.Len())
	}
}

// TestOpen_RefusesByKind tampers with a signed bundle in each way a bundle can fail
// and checks the kind of the refusal.
func TestOpen_RefusesByKind(t *testing.T) {
	k := newKeys(t, "RS256")
	signed := build(t, example, BuildOptions{Signing: k.signing()})
	unsigned := build(t, example, BuildOptions{})
	edit := func(data []byte, f func([]entry) []entry) []byte { return rewrite(t, data, f) }
	policy := "/policies/agentd/lib/lib.rego"
	cases := []struct {
		name   string
		bundle []byte
		opts   OpenOptions
		want   Kind
		file   string
	}{
		{"one byte of a policy", edit(signed, func(es []entry) []entry {
			for i := range es {
				if es[i].name == policy {
					es[i].data = bytes.Clone(es[i].data)
					es[i].data[len(es[i].data)/2] ^= 1
				}
			}
			return es
		}), k.openOptions(t), KindDigest, "policies/agentd/lib/lib.rego"},
		{"the manifest's revision", edit(signed, func(es []entry) []entry {
			for i := range es {
				if es[i].name == "/.manifest" {
					es[i].data = bytes.Replace(es[i].data, []byte(`"revision":"g-`), []byte(`"revision":"h-`), 1)
				}
			}
			return es
		}), k.openOptions(t), KindDigest, ".manifest"},
		{"a file added", edit(signed, func(es []entry) []entry {
			return append(es, entry{name: "/hooks/99-extra.yaml", typeflag: tar.TypeReg, data: []byte("kind: HookSet\n")})
		}), k.openOptions(t), KindFileNotSigned, "hooks/99-extra.yaml"},
		{"a file removed", edit(signed, func(es []entry) []entry {
			return slices.DeleteFunc(es, func(e entry) bool { return e.name == "/hooks/20-plan.yaml" })
		}), k.openOptions(t), KindFileMissing, "hooks/20-plan.yaml"},
		{"another key", signed, newKeys(t, "RS256").openOptions(t), KindSignature, SignaturesFile},
		{"unsigned with a key", unsigned, k.openOptions(t), KindUnsigned, ""},
		{"signed without a key", signed, OpenOptions{}, KindNoKey, SignaturesFile},
		{"a name that climbs out", edit(unsigned, func(es []entry) []entry {
			return append(es, entry{name: "../../etc/cron.d/x", typeflag: tar.TypeReg, data: []byte("x")})
		}), OpenOptions{}, KindUnsafePath, "../../etc/cron.d/x"},
		{"a symlink", edit(unsigned, func(es []entry) []entry {
			return append(es, entry{name: "/hooks/link.yaml", typeflag: tar.TypeSymlink})
		}), OpenOptions{}, KindUnsafePath, "/hooks/link.yaml"},
		{"a name twice", edit(unsigned, func(es []entry) []entry {
			return append(es, entry{name: "hooks/20-plan.yaml", typeflag: tar.TypeReg, data: []byte("x")})
		}), OpenOptions{}, KindUnsafePath, "hooks/20-plan.yaml"},
		{"not gzip", []byte("PK\x03\x04 a zip"), OpenOptions{}, KindUnreadable, ""},
		{"over the size limit", unsigned, OpenOptions{MaxBytes: 1000}, KindUnreadable, ""},
		{"a revision that cannot be an id", edit(unsigned, func(es []entry) []entry {
			for i := range es {
				if es[i].name == "/.manifest" {
					es[i].data = []byte(`{"revision":"a b/../c"}`)
				}
			}
			return es
		}), OpenOptions{}, KindManifest, ".manifest"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := Open(bytes.NewReader(c.bundle), c.opts)
			if a != nil {
				t.Fatalf("Open accepted the bundle (revision %q)", a.Revision)
			}
			e, ok := err.(*Error)
			if !ok || e.Kind != c.want || e.File != c.file {
				t.Fatalf("Open error %v (%T), want kind %s on %q", err, err, c.want, c.file)
			}
		})
	}
}

func TestCheckRevision(t *testing.T) {
	for rev, ok := range map[string]bool{"v1.2.3": true, "2026-12-05T14:00:00Z": true, "g-91dd6d66": true, "": false, "a/b": false, "a b": false, strings.Repeat("x", 129): false} {
		if err := CheckRevision(rev); (err == nil) != ok {
			t.Errorf("CheckRevision(%q) = %v, want ok %v", rev, err, ok)
		}
	}
}

func TestVerificationKey_AlgorithmFromTheKey(t *testing.T) {
	for _, alg := range []string{"RS256", "ES256", "HS256"} {
		vc, err := VerificationKey(newKeys(t, alg).public, "")
		if err != nil {
			t.Fatal(err)
		}
		if got := vc.PublicKeys[DefaultKeyID].Algorithm; got != alg {
			t.Errorf("%s key: algorithm %s", alg, got)
		}
	}
	if _, err := VerificationKey(nil, ""); err == nil {
		t.Error("an empty key was accepted")
	}
}
