// Package reads finds which parts of its input a Rego query's evaluation may observe,
// and keys inputs by exactly those parts, so that decisions can be memoized: two inputs
// with the same key get the same decision from every evaluation the analysis covers.
// The same parts alone make the input a memoized query is evaluated on (Tree.Input),
// and say whether a guard reads a member at all (Tree.MayRead).
//
// Analyze walks the compiled policies from a query and returns a Tree of input paths:
// it follows input values through variables, rules, functions, the composites and
// messages built from them and the built-ins it models, keys a value only reached by
// its type and one compared with a constant by its value, and counts every use it does
// not model as reading the value whole, or the whole input when it cannot follow at
// all. AnalyzeAllowed does the same for the evaluations in which the query's deny set
// comes out empty, which need not observe what only deny's entries are made of.
// Tree.Key is an unambiguous canonical encoding of the parts of an input the tree names
// (its SHA-256 when long), read through the input's engine.View without building the
// Rego value. Deterministic says whether decisions depend on the input alone, the
// precondition for keying them.
package reads
