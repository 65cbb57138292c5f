package image

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// WriteArchive writes img to w as one tar that is at once an OCI image layout (oci-layout,
// index.json, blobs/sha256/…: what `podman load` reads as oci-archive and `docker load`
// reads since Docker 25) and a docker-archive (manifest.json naming the same blobs, as
// `docker save` writes it: what older `docker load` reads). Both name the image ref
// (repository:tag, e.g. agentd:v1.2.0), which must be a valid image reference. Blobs are
// written once each; entry times are the Unix epoch, so equal images give equal archives.
func WriteArchive(w io.Writer, img v1.Image, ref string) error {
	if !refPattern.MatchString(ref) {
		return fmt.Errorf("image name %q is not repository:tag", ref)
	}
	manifest, err := img.RawManifest()
	if err != nil {
		return err
	}
	manifestDigest, err := img.Digest()
	if err != nil {
		return err
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	configName, err := img.ConfigName()
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}

	tw := tar.NewWriter(w)
	put := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(0, 0)}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	blob := func(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }

	if err := put("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := put(blob(configName), config); err != nil {
		return err
	}
	layerPaths := make([]string, 0, len(layers))
	written := map[v1.Hash]bool{}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return err
		}
		layerPaths = append(layerPaths, blob(d))
		if written[d] {
			continue
		}
		written[d] = true
		if err := putLayer(tw, blob(d), l); err != nil {
			return err
		}
	}
	if err := put(blob(manifestDigest), manifest); err != nil {
		return err
	}
	index, err := json.Marshal(v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests: []v1.Descriptor{{
			MediaType: types.OCIManifestSchema1, Digest: manifestDigest, Size: int64(len(manifest)),
			Annotations: map[string]string{
				"org.opencontainers.image.ref.name": ref,
				"io.containerd.image.name":          ref,
			},
		}},
	})
	if err != nil {
		return err
	}
	if err := put("index.json", index); err != nil {
		return err
	}
	dockerManifest, err := json.Marshal([]struct {
		Config   string
		RepoTags []string
		Layers   []string
	}{{Config: blob(configName), RepoTags: []string{ref}, Layers: layerPaths}})
	if err != nil {
		return err
	}
	if err := put("manifest.json", dockerManifest); err != nil {
		return err
	}
	return tw.Close()
}

// refPattern is a repository (lower-case path components) and a tag.
var refPattern = regexp.MustCompile(`^[a-z0-9]+(?:[._-][a-z0-9]+)*(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

func putLayer(tw *tar.Writer, name string, l v1.Layer) error {
	size, err := l.Size()
	if err != nil {
		return err
	}
	rc, err := l.Compressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: size, ModTime: time.Unix(0, 0)}); err != nil {
		return err
	}
	_, err = io.Copy(tw, rc)
	return err
}
