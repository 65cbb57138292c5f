// Package expr compiles and evaluates the CEL expressions of agentd's declarative hooks:
// the when, deny_if and where conditions and computed enrichment values. A Compiler holds
// one CEL environment per Scope, built once; Compile type-checks an expression against its
// scope's variables, checks its output Kind and estimates its worst-case cost, rejecting
// over-budget expressions at load time, and returns an immutable Program. Evaluating a
// Program takes a Vars (the variable values, resolved lazily without building a map), is
// bounded by the cost limit (by the estimate when the inputs are within its assumed
// sizes, else tracked at run time) and by the context, and returns plain Go values.
// Compile failures are *diag.Error values with a stable diag.Kind and a 1-based
// line:column within the expression; evaluation failures are *EvalError values with a
// stable EvalKind. Besides the CEL standard library, expressions may use the strings,
// lists, sets, math and encoders extensions.
//
// plan, step, result and call are the JSON form of their Go values (engine.View): fields
// that the JSON form omits when empty are absent in expressions too, so test them with
// has(), e.g. has(call.capability) && call.capability == 'execute_trade'; and a nil
// slice is null, so a plan without steps has plan.steps == null, on which size() fails
// to evaluate.
package expr
