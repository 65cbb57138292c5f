// Package config loads a config directory into one immutable, compiled generation: the
// declarative hooks (YAML pipelines of built-in actions with CEL and Rego), the agent
// catalog, the operation guards and the protocol gateways' settings (an MCP gateway's
// upstream servers are catalog agents too; see MCPServer).
//
// A config directory holds hooks/*.yaml (one HookSet document each, concatenated in
// lexical file order: file order, then document order, is registration order),
// policies/**/*.rego (Rego v1; *_test.rego files are left to `opa test`),
// data/**/*.{json,yaml,yml} (OPA data documents, mounted at the path of their folder
// under data/) and tests/*.yaml (pipeline test cases, not part of a generation).
//
// Load compiles everything or nothing: it returns a *Generation only when every file
// compiles, and otherwise a diag.List with every problem found, each with its
// file:line:col. Declarative hooks implement the engine's stage interfaces, so the
// runtime has one path for Go and YAML hooks.
package config
