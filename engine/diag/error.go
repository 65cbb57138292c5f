package diag

import (
	"strconv"
	"strings"
)

// Kind is the stable code of an Error: a snake_case string, safe to compare and to use
// as a metric label. Tests assert the kind, never the message.
type Kind string

// Error kinds.
const (
	KindYAMLSyntax            Kind = "yaml_syntax"             // the file is not valid YAML
	KindSchema                Kind = "schema"                  // the document violates its JSON Schema
	KindUnknownKey            Kind = "unknown_key"             // a key the schema does not define
	KindDuplicateKey          Kind = "duplicate_key"           // the same mapping key twice
	KindDuplicateHook         Kind = "duplicate_hook"          // two hooks with one name
	KindInvalidValue          Kind = "invalid_value"           // a value the schema allows but the loader rejects
	KindUnknownAction         Kind = "unknown_action"          // a step names no built-in action
	KindInvalidParams         Kind = "invalid_params"          // an action rejected its params
	KindCELSyntax             Kind = "cel_syntax"              // a CEL expression does not parse
	KindCELTypeCheck          Kind = "cel_type_check"          // a CEL expression does not type-check
	KindCELUndeclaredVariable Kind = "cel_undeclared_variable" // a CEL variable the stage does not declare
	KindCELCostLimit          Kind = "cel_cost_limit"          // a CEL expression's estimated cost is over budget
	KindRegoParse             Kind = "rego_parse"              // a Rego module does not parse
	KindRegoCompile           Kind = "rego_compile"            // Rego modules do not compile together
	KindRegoUnsafeBuiltin     Kind = "rego_unsafe_builtin"     // a Rego module calls a disabled built-in
	KindUndefinedQuery        Kind = "undefined_query"         // a rego query names no rule
	KindDataSyntax            Kind = "data_syntax"             // a data document is not valid JSON or YAML
	KindDataConflict          Kind = "data_conflict"           // two data documents write one path
	KindRequiredHook          Kind = "required_hook"           // a required hook that breaks the required-hook rules
	KindCatalog               Kind = "catalog"                 // an invalid agent catalog
	KindGuard                 Kind = "guard"                   // invalid operation guards
	KindGateway               Kind = "gateway"                 // a gateway setting that contradicts the rest of the config
	KindIO                    Kind = "io"                      // a file could not be read
	KindTooManyErrors         Kind = "too_many_errors"         // Normalize dropped errors over its cap
)

// Error is one configuration problem. Kind is one of the Kind constants. File is the
// path as the loader names it (relative to the config directory); Line and Column are
// 1-based, Column in bytes, and 0 when unknown. Field is the dotted location of the
// offending value inside the document (e.g. "hooks[2].steps[0].enrich.key"), empty when
// not applicable. Message is human-readable English and carries no position.
type Error struct {
	Kind    Kind
	File    string
	Line    int
	Column  int
	Field   string
	Message string

	dropped int // for KindTooManyErrors entries: how many errors Normalize dropped
}

// Error reads like `hooks/cache.yaml:12:7: schema: missing property "stage"`. A zero
// Line drops ":line:col", a zero Column drops ":col", and an empty File starts the text
// at the line number, or at the kind when there is no position at all.
func (e *Error) Error() string {
	var b strings.Builder
	pos := e.position()
	b.Grow(len(pos) + len(e.Kind) + len(e.Message) + 4)
	if pos != "" {
		b.WriteString(pos)
		b.WriteString(": ")
	}
	b.WriteString(string(e.Kind))
	b.WriteString(": ")
	b.WriteString(e.Message)
	return b.String()
}

// Pos returns the error's position.
func (e *Error) Pos() Pos { return Pos{Line: e.Line, Column: e.Column} }

// position renders "file:line:col", leaving out the parts that are unknown.
func (e *Error) position() string {
	parts := make([]string, 0, 3)
	if e.File != "" {
		parts = append(parts, e.File)
	}
	if e.Line > 0 {
		parts = append(parts, strconv.Itoa(e.Line))
		if e.Column > 0 {
			parts = append(parts, strconv.Itoa(e.Column))
		}
	}
	return strings.Join(parts, ":")
}
