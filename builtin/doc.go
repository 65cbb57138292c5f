// Package builtin is the registry of agentd's built-in actions: the steps a declarative
// hook is made of. Each action validates its YAML params at load, with file:line:col
// errors, and compiles them once into an Action; the hot path only runs compiled
// Actions against a State.
//
// The registry is the single source of truth for which actions exist, in which stages
// they may appear and which params they take: each Param declares its type, default and
// enum values once. The loader checks params against the declarations, Compile reads them
// through Params (which applies them), and the HookSet schema's action $defs and the
// README's action table are generated from them by the go:generate line below; a test of
// the generator fails when either file drifts.
package builtin

//go:generate go run ./internal/gendocs -schema ../schemas/hookset.schema.json -readme ../README.md
