// Package compare asks a generation what it would have decided of a call another
// generation decided, and tells the two decisions apart. It writes nothing: no request
// state, no record, no cache entry, no rate-limit count. The shadow configuration of
// `agentd serve --shadow` and `agentd replay` are built on it.
//
// A decision is reduced to a Verdict (outcome, violations, denial, the digest of a
// final response); Compare classifies a pair of verdicts as the same, newly denied,
// newly allowed or changed.
package compare
