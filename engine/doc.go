// Package engine is the agentd runtime: the data types of docs/semantics.md §1, the
// four hook stages (before_planning, after_planning, after_execution, after_synthesis),
// plan validation, execution records and the request driver. docs/semantics.md is the
// contract the package implements; comments cite its sections.
//
// A Pipeline is built once from an ordered hook list by New, which validates the list
// and copies it; the result is immutable and safe for concurrent use by any number of
// requests. Each request owns one PipelineContext, which the stage runners hand to the
// hooks one at a time, so hooks never need locks around it.
//
// The package knows nothing about YAML, HTTP or files: declarative hooks (package
// config) and the daemon (cmd/agentd) are layered on top of it and reach it through
// the same stage interfaces as hooks written in Go.
package engine
