// Package bundle packs a config directory into an OPA-format bundle and serves one:
// a gzipped tar of the directory's files (hooks/, policies/, data/ and optionally
// tests/, under the names the loader reads them by) with a .manifest that carries the
// revision and roots and, when signed, a .signatures.json in OPA's format: one JWT
// whose payload lists every file with its SHA-256, files OPA reads as structured
// documents (.manifest, data.json, data.yaml) hashed over their parsed value as OPA
// hashes them, every other file over its bytes.
//
// Build writes a bundle; Open reads one and verifies it (the signature, that every
// file is listed and every listed file present, every hash), so an Archive is always
// complete and verified. A Source fetches a bundle from a file or an HTTP server,
// polls it (ETag and If-None-Match, bounded backoff on failure) and activates each new
// revision through a reload.Reloader: the generation's id is the bundle's revision,
// so replicas that load one revision share the generation. A bundle that does not
// verify or does not compile never goes live; the last good one keeps serving and
// the failure shows in Status (OPA's bundle status fields), a metric and the log.
package bundle
