// Package diag is the one error family of configuration loading: every problem the
// loader finds in a config directory (YAML syntax, schema, CEL, Rego, data, catalog,
// guard and I/O problems) is an *Error with a stable Kind and a file:line:column
// position, and a load reports all of them at once as a List.
//
// The loader collects errors in any order, calls List.Normalize once on the complete
// list to sort, deduplicate and cap it, and returns the List as its error. Callers match
// on Kind (AsList, List.Kinds), never on Message. List.Render prints the list for a
// terminal with the offending source line and a caret under the column.
//
// Positions are 1-based; Column counts bytes within the line. Pos.Advance maps a
// position reported inside an embedded snippet (a CEL expression, a Rego query) back to
// the file, and ByteColumn converts the character columns yaml.v3 reports.
//
// The package uses the standard library only, so every layer can import it.
package diag
