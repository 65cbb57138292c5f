package bundle

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/config/reload"
)

// BenchmarkActivation compares what a new configuration costs to go live: a directory
// compiled by a reload, against a bundle fetched from a file, verified (signed: the
// JWT and every file's hash), extracted and compiled by its source. Each bundle
// iteration activates another revision than the one live.
func BenchmarkActivation(b *testing.B) {
	b.Run("directory", func(b *testing.B) {
		reg := reload.NewRegistry(2)
		r, err := reload.NewReloader(example, config.Options{}, reg, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := r.Reload(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, signed := range []bool{false, true} {
		name := "bundle-unsigned"
		var opts OpenOptions
		var signing *Signing
		if signed {
			k := newKeys(b, "RS256")
			name, opts, signing = "bundle-signed", k.openOptions(b), k.signing()
		}
		b.Run(name, func(b *testing.B) {
			revisions := [][]byte{
				build(b, example, BuildOptions{Revision: "r1", Signing: signing}),
				build(b, example, BuildOptions{Revision: "r2", Signing: signing}),
			}
			path := filepath.Join(b.TempDir(), "agentd.tar.gz")
			reg := reload.NewRegistry(2)
			src, err := NewSource(SourceOptions{Location: path, Open: opts}, reg, config.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer src.Close()
			i := 0
			for b.Loop() {
				b.StopTimer()
				if err := writeFileAtomic(path, revisions[i%2]); err != nil {
					b.Fatal(err)
				}
				i++
				b.StartTimer()
				if err := src.Update(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(revisions[0])), "bundle-bytes")
		})
	}
}
