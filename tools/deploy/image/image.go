// Package image builds agentd's OCI image without a container daemon and without pulling
// anything: the layers are written here from files on this machine onto an empty base
// (go-containerregistry's empty.Image), and the archive is written by WriteArchive in a
// form both `docker load` and `podman load` accept.
//
// The image holds, in three layers (least to most often changed):
//
//   - the base: /etc/passwd and /etc/group with the numeric non-root user UID (65532),
//     the CA bundle at /etc/ssl/certs/ca-certificates.crt, and an empty /var/lib/agentd
//     owned by that user;
//   - a copy of a config directory at /etc/agentd (symlinks followed), the placeholder
//     config that users replace (a ConfigMap, a volume or a derived image);
//   - the static agentd binary at /agentd.
//
// Its config runs /agentd as UID:UID with the arguments Options.Cmd, exposes 8181/tcp and
// carries the OCI labels version, revision, source, title and created; the manifest
// carries the same as OCI annotations. Every file time is Options.Created, so the same
// inputs give the same image digest.
package image

import (
	"debug/elf"
	"errors"
	"fmt"
	"maps"
	"os"
	"strconv"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Paths and identities inside the image.
const (
	// BinaryPath is the entrypoint.
	BinaryPath = "/agentd"
	// ConfigDir is where the placeholder config sits.
	ConfigDir = "/etc/agentd"
	// DataDir is agentd's state directory, owned by UID.
	DataDir = "/var/lib/agentd"
	// CAPath is where the CA bundle sits, the first place Go's crypto/x509 looks on Linux.
	CAPath = "/etc/ssl/certs/ca-certificates.crt"
	// UID is the numeric user (and group) the image runs as.
	UID = 65532
	// Port is the port the default command listens on.
	Port = 8181
)

// DefaultCmd is the image's default command: serve ConfigDir on all interfaces, the
// durable store's file under DataDir (named, not left to the working directory).
var DefaultCmd = []string{"serve", "--config", ConfigDir, "--addr", ":" + strconv.Itoa(Port), "--data-dir", DataDir}

// Options are the inputs of Build. Binary, Config and CACerts are files on this machine.
type Options struct {
	Binary   string      // the agentd binary: a static ELF executable for Platform
	Config   string      // the config directory copied to ConfigDir
	CACerts  string      // the CA bundle copied to CAPath (Debian: ca-certificates)
	Platform v1.Platform // OS must be linux; Architecture a GOARCH (amd64, arm64)
	Cmd      []string    // the default command; nil means DefaultCmd
	Version  string      // org.opencontainers.image.version
	Revision string      // org.opencontainers.image.revision (a commit)
	Source   string      // org.opencontainers.image.source (a repository URL)
	Created  time.Time   // the image's creation time and every file's modification time
}

// The kinds of Build's errors (errors.Is).
var (
	// ErrNoCACerts: the CA bundle is missing.
	ErrNoCACerts = errors.New("no CA certificates")
	// ErrBinary: the binary is not a static ELF executable of the image's architecture.
	ErrBinary = errors.New("unfit agentd binary")
	// ErrPlatform: the platform is not linux on a known architecture.
	ErrPlatform = errors.New("unsupported image platform")
)

// elfMachines maps GOARCH values to the ELF machine of their binaries.
var elfMachines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "arm": elf.EM_ARM,
	"386": elf.EM_386, "ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390, "riscv64": elf.EM_RISCV,
}

// Build returns the image described in the package doc. It fails when the CA bundle is
// missing (ErrNoCACerts, with a message naming the Debian package), when Binary is not a
// static ELF executable of Platform's architecture (ErrBinary: a dynamically linked binary
// would not start on the empty base), when Platform is not linux on a known architecture
// (ErrPlatform), or when a file cannot be read.
func Build(opts Options) (v1.Image, error) {
	if opts.Platform.OS != "linux" {
		return nil, fmt.Errorf("%w %q: only linux images are built", ErrPlatform, opts.Platform.OS)
	}
	if err := checkStatic(opts.Binary, opts.Platform.Architecture); err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(opts.CACerts)
	if err != nil {
		return nil, fmt.Errorf("%w: %v (install the Debian package ca-certificates)", ErrNoCACerts, err)
	}
	cmd := opts.Cmd
	if cmd == nil {
		cmd = DefaultCmd
	}
	created := opts.Created.UTC()

	base := newLayer(created)
	base.file("/etc/passwd", 0o644, []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nagentd:x:%d:%d:agentd:%s:/sbin/nologin\n", UID, UID, DataDir)))
	base.file("/etc/group", 0o644, []byte(fmt.Sprintf("root:x:0:\nagentd:x:%d:\n", UID)))
	base.file(CAPath, 0o644, ca)
	base.dir(DataDir, 0o750, UID)
	config := newLayer(created)
	if err := config.copyTree(opts.Config, ConfigDir); err != nil {
		return nil, err
	}
	binary := newLayer(created)
	bin, err := os.ReadFile(opts.Binary)
	if err != nil {
		return nil, err
	}
	binary.file(BinaryPath, 0o755, bin)

	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	for _, l := range []struct {
		layer *layer
		what  string
	}{{base, "users, CA certificates, " + DataDir}, {config, "placeholder config at " + ConfigDir}, {binary, "agentd at " + BinaryPath}} {
		ly, err := l.layer.build()
		if err != nil {
			return nil, err
		}
		if img, err = mutate.Append(img, mutate.Addendum{Layer: ly, History: v1.History{Created: v1.Time{Time: created}, CreatedBy: "agentd-image: " + l.what}}); err != nil {
			return nil, err
		}
	}

	labels := map[string]string{
		"org.opencontainers.image.title":    "agentd",
		"org.opencontainers.image.version":  opts.Version,
		"org.opencontainers.image.revision": opts.Revision,
		"org.opencontainers.image.source":   opts.Source,
		"org.opencontainers.image.created":  created.Format(time.RFC3339),
	}
	maps.DeleteFunc(labels, func(_, v string) bool { return v == "" })
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = opts.Platform.OS, opts.Platform.Architecture, opts.Platform.Variant
	cf.Created = v1.Time{Time: created}
	cf.Config = v1.Config{
		Entrypoint:   []string{BinaryPath},
		Cmd:          cmd,
		User:         fmt.Sprintf("%d:%d", UID, UID),
		WorkingDir:   DataDir,
		ExposedPorts: map[string]struct{}{strconv.Itoa(Port) + "/tcp": {}},
		Labels:       labels,
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, err
	}
	return mutate.Annotations(img, maps.Clone(labels)).(v1.Image), nil
}

// checkStatic fails unless path is an ELF executable for the GOARCH arch with no
// program interpreter (a static binary, as CGO_ENABLED=0 builds).
func checkStatic(path, arch string) error {
	want, ok := elfMachines[arch]
	if !ok {
		return fmt.Errorf("%w: architecture %q", ErrPlatform, arch)
	}
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%w %s: %v", ErrBinary, path, err)
	}
	defer f.Close()
	if f.Machine != want {
		return fmt.Errorf("%w %s: built for %s, the image is %s (set GOARCH)", ErrBinary, path, f.Machine, arch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%w %s: dynamically linked; build it with CGO_ENABLED=0", ErrBinary, path)
		}
	}
	return nil
}
