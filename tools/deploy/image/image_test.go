package image

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// repoRoot is the agentd repository this module sits in (tools/deploy/image).
const repoRoot = "../../.."

var (
	agentdOnce sync.Once
	agentdPath string
	agentdErr  error
)

// agentdBinary returns a static linux agentd: $AGENTD_IMAGE_BINARY when set (make image
// leaves one at dist/image/agentd), else one built once for the package's tests with the
// flags make image uses.
func agentdBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("AGENTD_IMAGE_BINARY"); p != "" {
		return p
	}
	agentdOnce.Do(func() {
		dir, err := os.MkdirTemp("", "agentd-image-test-")
		if err != nil {
			agentdErr = err
			return
		}
		agentdPath = filepath.Join(dir, "agentd")
		cmd := exec.Command("go", "build", "-trimpath", "-o", agentdPath, "./cmd/agentd")
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
		if out, err := cmd.CombinedOutput(); err != nil {
			agentdErr = errors.New(string(out))
		}
	})
	if agentdErr != nil {
		t.Fatalf("build agentd: %v", agentdErr)
	}
	return agentdPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if agentdPath != "" {
		os.RemoveAll(filepath.Dir(agentdPath))
	}
	os.Exit(code)
}

func testOptions(t *testing.T) Options {
	return Options{
		Binary: agentdBinary(t), Config: filepath.Join(repoRoot, "examples/stock-agent"),
		CACerts: "/etc/ssl/certs/ca-certificates.crt", Platform: v1.Platform{OS: "linux", Architecture: hostArch(t)},
		Version: "v0.0.0-test", Revision: "0123456789abcdef", Source: "https://github.com/agentd-dev/agentd",
		Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

func hostArch(t *testing.T) string {
	out, err := exec.Command("go", "env", "GOARCH").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// TestImage_EntrypointServesTheConfigFromItsOwnFilesystem builds the image, writes the
// archive, reads it back both as docker-archive and as OCI layout, unpacks its layers
// and runs its entrypoint with its default command against its own /etc/agentd: /readyz
// must answer 200. As root the process runs chrooted into the unpacked filesystem as the
// image's user, as a container runtime would start it; otherwise the absolute paths of
// the command are taken inside the unpacked tree.
func TestImage_EntrypointServesTheConfigFromItsOwnFilesystem(t *testing.T) {
	if _, err := os.Stat("/etc/ssl/certs/ca-certificates.crt"); err != nil {
		t.Fatalf("the image needs the Debian package ca-certificates: %v", err)
	}
	opts := testOptions(t)
	img, err := Build(opts)
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "agentd.tar")
	f, err := os.Create(archive)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteArchive(f, img, "agentd:v0.0.0-test"); err != nil {
		t.Fatal(err)
	}
	f.Close()

	want, _ := img.Digest()
	docker, err := tarball.ImageFromPath(archive, nil)
	if err != nil {
		t.Fatalf("read as docker-archive: %v", err)
	}
	oci := readOCILayout(t, archive)
	if d, _ := oci.Digest(); d != want {
		t.Errorf("OCI layout image digest %s, built %s", d, want)
	}
	cfg, err := docker.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	checkConfig(t, cfg, opts)
	if m, _ := oci.Manifest(); m.Annotations["org.opencontainers.image.revision"] != opts.Revision {
		t.Errorf("manifest annotations %v lack the revision", m.Annotations)
	}

	root := t.TempDir()
	owners := unpack(t, docker, root)
	if o := owners[strings.TrimPrefix(DataDir, "/")]; o != UID {
		t.Errorf("%s is owned by %d, want %d", DataDir, o, UID)
	}
	passwd, _ := os.ReadFile(filepath.Join(root, "etc/passwd"))
	if !strings.Contains(string(passwd), ":"+strconv.Itoa(UID)+":"+strconv.Itoa(UID)+":") {
		t.Errorf("/etc/passwd has no user %d:\n%s", UID, passwd)
	}
	for _, p := range []string{"etc/agentd/hooks/20-plan.yaml", "etc/agentd/policies/agentd/plan/plan.rego", "etc/agentd/data/agentd/limits.json", CAPath[1:]} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("the image lacks /%s: %v", p, err)
		}
	}
	serveAndProbe(t, root, cfg)
}

func checkConfig(t *testing.T, cfg *v1.ConfigFile, opts Options) {
	t.Helper()
	c := cfg.Config
	uid, _, _ := strings.Cut(c.User, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Errorf("User %q is not a numeric non-root user", c.User)
	}
	if strings.Join(c.Entrypoint, " ") != BinaryPath || strings.Join(c.Cmd, " ") != strings.Join(DefaultCmd, " ") {
		t.Errorf("Entrypoint %q Cmd %q", c.Entrypoint, c.Cmd)
	}
	if _, ok := c.ExposedPorts["8181/tcp"]; !ok {
		t.Errorf("ExposedPorts %v lack 8181/tcp", c.ExposedPorts)
	}
	for k, v := range map[string]string{
		"org.opencontainers.image.version": opts.Version, "org.opencontainers.image.revision": opts.Revision,
		"org.opencontainers.image.source": opts.Source, "org.opencontainers.image.created": "2026-01-02T03:04:05Z",
	} {
		if c.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, c.Labels[k], v)
		}
	}
	if cfg.OS != "linux" || cfg.Architecture != opts.Platform.Architecture {
		t.Errorf("platform %s/%s", cfg.OS, cfg.Architecture)
	}
}

// readOCILayout unpacks the archive's OCI layout side and returns its one image.
func readOCILayout(t *testing.T, archive string) v1.Image {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatalf("read as OCI layout: %v", err)
	}
	m, err := idx.IndexManifest()
	if err != nil || len(m.Manifests) != 1 {
		t.Fatalf("index.json: %v %+v", err, m)
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// unpack extracts the image's flattened filesystem into root, with the modes of its tar
// and, as root, its owners; it returns each path's owner uid.
func unpack(t *testing.T, img v1.Image, root string) map[string]int {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	owners := map[string]int{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(h.Name, "/")
		owners[name] = h.Uid
		p := filepath.Join(root, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, os.FileMode(h.Mode).Perm())
		case tar.TypeReg:
			var data []byte
			if data, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(p, data, os.FileMode(h.Mode).Perm())
			}
		default:
			t.Fatalf("unexpected entry %s of type %c", h.Name, h.Typeflag)
		}
		if err == nil {
			err = os.Chmod(p, os.FileMode(h.Mode).Perm())
		}
		if err == nil && os.Geteuid() == 0 {
			err = os.Lchown(p, h.Uid, h.Gid)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return owners
}

// serveAndProbe runs the unpacked entrypoint with the image's command (its --addr moved
// to a free loopback port) and waits for /readyz to answer 200.
func serveAndProbe(t *testing.T, root string, cfg *v1.ConfigFile) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	args := append([]string{}, cfg.Config.Cmd...)
	for i := range args {
		if i > 0 && args[i-1] == "--addr" {
			args[i] = addr
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var cmd *exec.Cmd
	if os.Geteuid() == 0 {
		uid, _, _ := strings.Cut(cfg.Config.User, ":")
		n, _ := strconv.Atoi(uid)
		cmd = exec.CommandContext(ctx, cfg.Config.Entrypoint[0], args...)
		cmd.Path = cfg.Config.Entrypoint[0]
		cmd.Dir = cfg.Config.WorkingDir
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: uint32(n), Gid: uint32(n)}}
	} else {
		for i, a := range args {
			if strings.HasPrefix(a, "/") {
				args[i] = filepath.Join(root, a)
			}
		}
		cmd = exec.CommandContext(ctx, filepath.Join(root, cfg.Config.Entrypoint[0]), args...)
		cmd.Dir = filepath.Join(root, cfg.Config.WorkingDir)
	}
	cmd.Env = []string{}
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the image's entrypoint: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		<-exited
	}()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("the entrypoint exited (%v) before /readyz answered 200:\n%s", err, logs.String())
		case <-ctx.Done():
			t.Fatalf("/readyz never answered 200 (last: %v):\n%s", err, logs.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestBuild_Errors keys Build's failures on their kind.
func TestBuild_Errors(t *testing.T) {
	base := testOptions(t)
	for _, tc := range []struct {
		name   string
		change func(*Options)
		want   error
	}{
		{"no CA bundle", func(o *Options) { o.CACerts = filepath.Join(t.TempDir(), "missing.crt") }, ErrNoCACerts},
		{"dynamically linked binary", func(o *Options) { o.Binary = "/bin/ls" }, ErrBinary},
		{"not an ELF binary", func(o *Options) { o.Binary = filepath.Join(repoRoot, "Makefile") }, ErrBinary},
		{"binary of another architecture", func(o *Options) {
			o.Platform.Architecture = map[string]string{"arm64": "amd64"}[o.Platform.Architecture]
			if o.Platform.Architecture == "" {
				o.Platform.Architecture = "arm64"
			}
		}, ErrBinary},
		{"darwin", func(o *Options) { o.Platform.OS = "darwin" }, ErrPlatform},
		{"unknown architecture", func(o *Options) { o.Platform.Architecture = "mips" }, ErrPlatform},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := base
			tc.change(&o)
			if _, err := Build(o); !errors.Is(err, tc.want) {
				t.Fatalf("Build: %v, want %v", err, tc.want)
			}
		})
	}
}

// TestBuild_Reproducible: equal inputs give the same image digest and archive bytes.
func TestBuild_Reproducible(t *testing.T) {
	var digests []v1.Hash
	var archives [][]byte
	for range 2 {
		img, err := Build(testOptions(t))
		if err != nil {
			t.Fatal(err)
		}
		d, _ := img.Digest()
		digests = append(digests, d)
		var buf bytes.Buffer
		if err := WriteArchive(&buf, img, "agentd:test"); err != nil {
			t.Fatal(err)
		}
		archives = append(archives, buf.Bytes())
	}
	if digests[0] != digests[1] || !bytes.Equal(archives[0], archives[1]) {
		t.Errorf("two builds differ: %s, %s", digests[0], digests[1])
	}
}

func TestWriteArchive_RejectsABadRef(t *testing.T) {
	img, err := Build(testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"agentd", "Agentd:v1", "agentd:", "agentd:-v1"} {
		if err := WriteArchive(io.Discard, img, ref); err == nil {
			t.Errorf("WriteArchive accepted %q", ref)
		}
	}
}
