// Command agentd-image writes agentd's OCI image archive (see package image) from a
// static agentd binary, a config directory and the system's CA bundle, with no container
// daemon and no registry:
//
//	agentd-image -binary dist/image/agentd -out dist/agentd-image.tar -version v1.2.0 -revision $(git rev-parse HEAD)
//
// Load it with `podman load -i dist/agentd-image.tar` or `docker load -i …`. Exit status 2
// is a usage error, 1 a failed build.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/agentd-dev/agentd/tools/deploy/image"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("agentd-image", flag.ContinueOnError)
	var (
		out      = fs.String("out", "dist/agentd-image.tar", "archive to write")
		name     = fs.String("name", "agentd", "repository the archive names the image under (its tag is the version)")
		arch     = fs.String("arch", runtime.GOARCH, "the binary's and image's architecture (a GOARCH)")
		cmd      = fs.String("cmd", "", "the image's default command, arguments separated by spaces (default: "+strings.Join(image.DefaultCmd, " ")+")")
		created  = fs.String("created", "", "creation time, RFC 3339 or Unix seconds (default $SOURCE_DATE_EPOCH, else the Unix epoch)")
		caCerts  = fs.String("ca-certs", "/etc/ssl/certs/ca-certificates.crt", "CA bundle (Debian package ca-certificates)")
		cfgDir   = fs.String("config", "examples/stock-agent", "config directory copied to "+image.ConfigDir)
		binary   = fs.String("binary", "", "static agentd binary for linux/-arch (required)")
		version  = fs.String("version", "dev", "version: the image's tag and its org.opencontainers.image.version")
		revision = fs.String("revision", "", "commit: org.opencontainers.image.revision")
		source   = fs.String("source", "https://github.com/agentd-dev/agentd", "repository URL: org.opencontainers.image.source")
	)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *binary == "" || fs.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "agentd-image: -binary is required and there are no arguments")
		return 2
	}
	t, err := parseCreated(*created)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentd-image:", err)
		return 2
	}
	opts := image.Options{
		Binary: *binary, Config: *cfgDir, CACerts: *caCerts,
		Platform: v1.Platform{OS: "linux", Architecture: *arch},
		Cmd:      cmdOf(*cmd), Version: *version, Revision: *revision, Source: *source, Created: t,
	}
	img, err := image.Build(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentd-image:", err)
		return 1
	}
	if err := write(img, *out, *name+":"+tagOf(*version)); err != nil {
		fmt.Fprintln(os.Stderr, "agentd-image:", err)
		return 1
	}
	d, _ := img.Digest()
	fmt.Printf("%s: %s:%s linux/%s %s\n", *out, *name, tagOf(*version), *arch, d)
	return 0
}

// write writes the archive next to out and renames it over out, so a failed build never
// leaves a truncated archive behind.
func write(img v1.Image, out, ref string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(out), ".agentd-image-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := image.WriteArchive(f, img, ref); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), out)
}

// cmdOf is the -cmd flag's arguments, nil (image.DefaultCmd) when it has none.
func cmdOf(flag string) []string {
	if f := strings.Fields(flag); len(f) > 0 {
		return f
	}
	return nil
}

// notInTag matches the characters an image tag cannot hold.
var notInTag = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

// tagOf is version as an image tag: characters a tag cannot hold become '-'.
func tagOf(version string) string {
	t := notInTag.ReplaceAllString(version, "-")
	if t == "" || t[0] == '.' || t[0] == '-' {
		t = "v" + t
	}
	return t[:min(len(t), 128)]
}

func parseCreated(s string) (time.Time, error) {
	if s == "" {
		s = os.Getenv("SOURCE_DATE_EPOCH")
	}
	if s == "" {
		return time.Unix(0, 0), nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(n, 0), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("-created %q is neither RFC 3339 nor Unix seconds", s)
	}
	return t, nil
}
