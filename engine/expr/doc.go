// Package expr compiles and evaluates the CEL expressions of agentd's declarative hooks:
// the when, deny_if and where conditions and computed enrichment values. A Compiler holds
// one CEL environment per Scope, built once; Compile type-checks an expression against its
// scope's variables, checks its output Kind and estimates its worst-case cost, rejecting
// over-budget expressions at load time, and returns an immutable Program. Evaluating a
// Program takes a Vars (the variable values, resolved lazily without building a map), is
// bounded by a runtime cost limit and by the context, and returns plain Go values.
// Compile failures are *diag.Error values with a stable diag.Kind and a 1-based
// line:column within the expression; evaluation failures are *EvalError values with a
// stable EvalKind. Besides the CEL standard library, expressions may
// use the strings, lists, sets, math and encoders extensions.
//
// Fields that the JSON form of a value omits when empty are absent in expressions too:
// test them with has(), e.g. has(call.capability) && call.capability == 'execute_trade'.
package expr
