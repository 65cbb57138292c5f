// Package policies embeds agentd's reusable Rego library (this directory's
// agentd/**/*.rego, tests included) for `agentd init`, which writes it into a new
// config directory. The Rego files are the source; this file only embeds them.
package policies

import (
	"embed"
	"io/fs"
)

//go:embed agentd/lib/*.rego agentd/plan/*.rego
var library embed.FS

// Library returns the plan-review library: agentd/lib and agentd/plan, with their
// _test.rego files, as a file system rooted at this directory.
func Library() fs.FS { return library }
