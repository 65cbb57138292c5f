package bundle

import (
	"errors"
	"fmt"
)

// Kind classifies a bundle failure. Kinds are stable; Status reports them as code.
type Kind string

const (
	KindUnreadable       Kind = "bundle_unreadable"        // not a gzipped tar, or over a size limit
	KindUnsafePath       Kind = "bundle_unsafe_path"       // a file name that is absolute, climbs out or repeats
	KindManifest         Kind = "bundle_manifest_invalid"  // a .manifest that does not decode, or a bad revision
	KindUnsigned         Kind = "bundle_unsigned"          // no .signatures.json while a verification key is set
	KindNoKey            Kind = "bundle_verification_key"  // a signed bundle and no verification key
	KindSignature        Kind = "bundle_signature_invalid" // the JWT does not verify under the key
	KindFileNotSigned    Kind = "bundle_file_not_signed"   // a file the signature does not list
	KindDigest           Kind = "bundle_digest_mismatch"   // a file whose hash is not the signed one
	KindFileMissing      Kind = "bundle_file_missing"      // a file the signature lists that is absent
	KindDownload         Kind = "bundle_download_failed"   // the bundle could not be fetched
	KindActivation       Kind = "bundle_activation_failed" // the bundle's config does not compile or is refused
	KindSigningFailed    Kind = "bundle_signing_failed"    // agentd build could not sign
	KindRevisionConflict Kind = "bundle_revision_conflict" // a loaded revision with other content
)

// Error is a bundle failure: its Kind, the bundle file concerned when there is one,
// and what happened.
type Error struct {
	Kind    Kind
	File    string
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.File != "" {
		return fmt.Sprintf("%s: %s: %s", e.Kind, e.File, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Kind, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the Kind of err, "" when it is not a bundle Error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}

func fail(kind Kind, file string, err error) *Error {
	return &Error{Kind: kind, File: file, Message: err.Error(), Err: err}
}
