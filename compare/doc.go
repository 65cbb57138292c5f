// Package compare asks a generation what it would have decided of a call another
// generation decided, and tells the two decisions apart. It asks only through the
// engine's what-if path (engine.Generation.EvaluatePlan, EvaluateBeforePlanning,
// EvaluateSynthesis and EvaluateCall: the same request context and limits as the real
// call) and writes nothing: no request state, record, cache entry or rate-limit count
// (Services makes the built-in actions' services inert). The shadow configuration of
// `agentd serve --shadow` and `agentd replay` are built on it.
//
// A decision is reduced to a Verdict (outcome, violations, denial, the digest of a
// final response); Compare classifies a pair of verdicts as the same, newly denied,
// newly allowed or changed.
package compare
