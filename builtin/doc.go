// Package builtin is the registry of agentd's built-in actions: the steps a declarative
// hook is made of. Each action validates its YAML params at load, with file:line:col
// errors, and compiles them once into an Action; the hot path only runs compiled
// Actions against a State.
//
// The registry is the single source of truth for which actions exist, in which stages
// they may appear and which params they take: the loader, the JSON schema cross-check
// and the README's action table are all derived from it.
package builtin
