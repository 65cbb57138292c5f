package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"path"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/agentd-dev/agentd/builtin"
	"github.com/agentd-dev/agentd/engine/diag"
	"github.com/agentd-dev/agentd/engine/jsonread"
	"github.com/agentd-dev/agentd/engine/policy"
)

// decodeData decodes the data documents. A document mounts at the path of its folder
// under data/ (data/agentd/limits.json mounts at data.agentd), as OPA's loader does.
func decodeData(files []file) ([]policy.DataFile, diag.List) {
	var out []policy.DataFile
	var errs diag.List
	for _, f := range files {
		v, err := decodeDataFile(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		dir := strings.TrimPrefix(path.Dir(f.name), dataDir)
		var mount []string
		if dir = strings.Trim(dir, "/"); dir != "" {
			mount = strings.Split(dir, "/")
		}
		out = append(out, policy.DataFile{File: f.name, Path: mount, Value: v})
	}
	return out, errs
}

func decodeDataFile(f file) (any, *diag.Error) {
	src := builtin.NewSource(f.name, f.data)
	var v any
	if path.Ext(f.name) == ".json" {
		dec := json.NewDecoder(bytes.NewReader(f.data))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return nil, jsonError(src, err)
		}
		if at := jsonread.Trailing(f.data, dec.InputOffset()); at >= 0 {
			return nil, src.ErrorAt(diag.KindDataSyntax, offsetPos(f.data, at), "", "a data file holds exactly one JSON value")
		}
	} else if err := yaml.Unmarshal(f.data, &v); err != nil {
		e := yamlError(src, err)
		e.Kind = diag.KindDataSyntax
		return nil, e
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, src.ErrorAt(diag.KindDataSyntax, diag.Pos{Line: 1, Column: 1}, "", "a data document must be an object")
	}
	return v, nil
}

func jsonError(src *builtin.Source, err error) *diag.Error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	off := len(bytes.TrimRight(src.Data, " \t\r\n")) // an unexpected end: just after the last token
	switch {
	case errors.As(err, &syn):
		off = int(syn.Offset) - 1 // Offset counts the offending byte
	case errors.As(err, &typ):
		off = int(typ.Offset)
	}
	return src.ErrorAt(diag.KindDataSyntax, offsetPos(src.Data, off), "", err.Error())
}

// offsetPos converts a byte offset into a 1-based line and byte column.
func offsetPos(data []byte, off int) diag.Pos {
	off = min(max(off, 0), len(data))
	line := bytes.Count(data[:off], []byte{'\n'}) + 1
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return diag.Pos{Line: line, Column: max(col, 1)}
}
