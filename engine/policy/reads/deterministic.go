package reads

import (
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Deterministic reports whether the modules compiled by c refer to no non-deterministic
// built-in (time, random, uuid, ...), whether called or named anywhere else (a with may
// substitute one for a function). Data is fixed per compilation, so decisions are then
// a function of the input alone, and may be keyed by Tree.Key.
func Deterministic(c *ast.Compiler) bool {
	ok := true
	for _, m := range c.Modules {
		ast.WalkRefs(m, func(r ast.Ref) bool {
			if nondeterministic(r.String()) {
				ok = false
			}
			return !ok
		})
	}
	return ok
}

// clockBuiltins read the clock although OPA does not mark them non-deterministic:
// certificate chain verification checks validity periods against the current time
// unless the options give one.
var clockBuiltins = []string{
	ast.CryptoX509ParseAndVerifyCertificates.Name,
	ast.CryptoX509ParseAndVerifyCertificatesWithOptions.Name,
}

func nondeterministic(name string) bool {
	b, ok := ast.BuiltinMap[name]
	return ok && b.Nondeterministic || slices.Contains(clockBuiltins, name)
}
