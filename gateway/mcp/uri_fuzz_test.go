package mcp

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// FuzzAmbiguousURI checks the properties of the resource-URI check rather than
// examples: it never panics, and a URI it accepts names, however many times an
// upstream percent-decodes it, the resource its text shows: every decoding has the
// same separators (no encoded slash or backslash, no backslash), no dot segment in its
// path ("." or "..", also before a ";parameter"), and no control character (a NUL
// that a C upstream would end the path at).
func FuzzAmbiguousURI(f *testing.F) {
	for _, s := range []string{
		"test://dyn/42", "file:///srv/docs/a.txt", "test://dyn/a..b", "test://dyn/.hidden", "test://dyn/42?x=../y",
		"test://dyn/{id}", "test://dyn/../x", "test://dyn/%2e%2e/x", "test://dyn/%252e%252e/x", "test://dyn/..;/x",
		"test://dyn/%2F", "test://dyn/a%5cb", "test://dyn/..%00", "test://dyn/%%32%65%%32%65/x", "test://dyn/a%3f/../b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		if ambiguousURI(uri) {
			return
		}
		slashes := strings.Count(uri, "/")
		d := uri
		for level := 0; level < 4; level++ {
			if strings.Count(d, "/") != slashes || strings.ContainsRune(d, '\\') {
				t.Fatalf("accepted %q: after %d decodings %q has other separators", uri, level, d)
			}
			if strings.ContainsFunc(d, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				t.Fatalf("accepted %q: after %d decodings %q has a control character", uri, level, d)
			}
			for _, seg := range strings.Split(uriPath(d), "/") {
				if seg, _, _ = strings.Cut(seg, ";"); seg == "." || seg == ".." {
					t.Fatalf("accepted %q: after %d decodings %q has a dot segment", uri, level, d)
				}
			}
			d = decodeOnce(d)
		}
	})
}

// uriPath is the part of a URI an upstream resolves as a path: after "scheme://",
// before a query or fragment.
func uriPath(uri string) string {
	if _, rest, ok := strings.Cut(uri, "://"); ok {
		uri = rest
	}
	if i := strings.IndexAny(uri, "?#"); i >= 0 {
		uri = uri[:i]
	}
	return uri
}

// escape is one well-formed percent-encoding.
var escape = regexp.MustCompile(`%[0-9A-Fa-f]{2}`)

// decodeOnce decodes every well-formed %XX of s once and keeps the rest, as a lenient
// upstream does (written apart from the gateway's own decoder).
func decodeOnce(s string) string {
	return escape.ReplaceAllStringFunc(s, func(e string) string {
		n, _ := strconv.ParseUint(e[1:], 16, 8)
		return string([]byte{byte(n)})
	})
}
