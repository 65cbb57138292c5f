package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentd-dev/agentd/builtin"
)

// generatedNote marks every generated $def for a reader of the schema.
const generatedNote = "Generated from the builtin registry by go generate ./builtin; edit builtin/, not this."

// actionDefs returns the generated members of the schema's $defs: step, which accepts
// one action per step, and action.<name>, the params of each action.
func actionDefs() object {
	names := builtin.Names()
	steps := make(object, len(names))
	defs := object{{"step", object{
		{"description", "One action: an object with exactly one key, the action name, whose value is the action's params."},
		{"$comment", generatedNote + " An unknown action fails additionalProperties at .../steps/N/<name>. " +
			"propertyNames is avoided: jsonschema/v6 reports its instance location unreliably."},
		{"type", "object"},
		{"minProperties", 1},
		{"maxProperties", 1},
		{"additionalProperties", false},
		{"properties", steps},
	}}}
	for i, name := range names {
		steps[i] = member{name, object{{"$ref", "#/$defs/action." + name}}}
		spec, _ := builtin.Lookup(name)
		defs = append(defs, member{"action." + name, actionSchema(spec)})
	}
	return defs
}

func actionSchema(s *builtin.Spec) object {
	def := object{{"description", s.Summary}, {"$comment", generatedNote}, {"type", "object"}}
	var required []string
	props := make(object, len(s.Params))
	for i, p := range s.Params {
		if p.Required {
			required = append(required, p.Name)
		}
		props[i] = member{p.Name, paramSchema(p)}
	}
	if len(required) > 0 {
		def = append(def, member{"required", required})
	}
	def = append(def, member{"additionalProperties", false})
	if len(s.RequireAny) > 0 {
		choices := make([]any, len(s.RequireAny))
		for i, name := range s.RequireAny {
			choices[i] = object{{"required", []string{name}}}
		}
		def = append(def, member{"anyOf", choices})
	}
	return append(def, member{"properties", props})
}

// paramSchema is the schema of one param: its doc, its type and its default.
func paramSchema(p builtin.Param) object {
	doc := p.Doc
	switch p.Type.Kind {
	case builtin.KindCEL:
		doc += " (a CEL expression of type " + p.Type.Result.String() + ")"
	case builtin.KindCELMap:
		doc += " (CEL expressions of type " + p.Type.Result.String() + ")"
	}
	s := append(object{{"description", doc}}, typeSchema(p)...)
	if p.Default != nil {
		s = append(s, member{"default", jsonDefault(p.Default)})
	}
	return s
}

func typeSchema(p builtin.Param) object {
	t := p.Type
	switch t.Kind {
	case builtin.KindString:
		if p.Required {
			return object{{"type", "string"}, {"minLength", 1}}
		}
		return object{{"type", "string"}}
	case builtin.KindInt:
		return object{{"type", "integer"}, {"minimum", t.Min}}
	case builtin.KindBool:
		return object{{"type", "boolean"}}
	case builtin.KindDuration:
		return object{{"$ref", "#/$defs/duration"}}
	case builtin.KindEnum:
		return object{{"enum", t.Values}}
	case builtin.KindEnumList:
		return object{{"type", "array"}, {"minItems", 1}, {"items", object{{"enum", t.Values}}}}
	case builtin.KindStringList:
		return object{{"type", "array"}, {"minItems", 1}, {"items", object{{"type", "string"}, {"minLength", 1}}}}
	case builtin.KindStringMap:
		return object{{"type", "object"}, {"additionalProperties", object{{"type", "string"}}}}
	case builtin.KindCEL:
		return object{{"$ref", "#/$defs/cel"}}
	case builtin.KindCELMap:
		return object{{"$ref", "#/$defs/cel_map"}}
	}
	panic("gendocs: no schema for param kind " + string(t.Kind))
}

// isGenerated reports whether the $defs member key is one actionDefs writes.
func isGenerated(key string) bool {
	return key == "step" || strings.HasPrefix(key, "action.")
}

// spliceSchema returns schema with the generated members of its top-level $defs, which
// must be adjacent, replaced by actionDefs. Every other byte stays as it is.
func spliceSchema(schema []byte) ([]byte, error) {
	start, end, err := generatedSpan(schema)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Write(schema[:start])
	for i, m := range actionDefs() {
		if i > 0 {
			b.WriteString(",\n" + defsIndent)
		}
		writeMember(&b, m, defsIndent)
	}
	b.Write(schema[end:])
	return b.Bytes(), nil
}

// defsIndent is the indentation of the members of the top-level $defs.
const defsIndent = "    "

// generatedSpan returns the byte range of schema from the key of the first generated
// member of the top-level $defs to the end of the value of the last one.
func generatedSpan(schema []byte) (start, end int, err error) {
	dec := json.NewDecoder(bytes.NewReader(schema))
	if err := openObject(dec); err != nil {
		return 0, 0, err
	}
	for dec.More() {
		key, _, err := nextKey(dec, schema)
		if err != nil {
			return 0, 0, err
		}
		if key != "$defs" {
			if err := skipValue(dec); err != nil {
				return 0, 0, err
			}
			continue
		}
		if err := openObject(dec); err != nil {
			return 0, 0, err
		}
		start, end, prevGenerated := -1, -1, false
		for dec.More() {
			key, keyStart, err := nextKey(dec, schema)
			if err != nil {
				return 0, 0, err
			}
			if err := skipValue(dec); err != nil {
				return 0, 0, err
			}
			generated := isGenerated(key)
			if generated && start >= 0 && !prevGenerated {
				return 0, 0, fmt.Errorf("$defs member %q is apart from the other generated members (step, action.*): keep them together", key)
			}
			if generated && start < 0 {
				start = keyStart
			}
			if generated {
				end = int(dec.InputOffset())
			}
			prevGenerated = generated
		}
		if start < 0 {
			return 0, 0, errors.New("$defs has no step or action.* member to replace")
		}
		return start, end, nil
	}
	return 0, 0, errors.New("no top-level $defs")
}

func openObject(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("at byte %d: want an object, got %v", dec.InputOffset(), tok)
	}
	return nil
}

// nextKey reads the next member key of an object and returns it with the offset of its
// opening quote.
func nextKey(dec *json.Decoder, schema []byte) (string, int, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", 0, err
	}
	key, _ := tok.(string)
	quoted, _ := json.Marshal(key)
	end := int(dec.InputOffset())
	start := end - len(quoted)
	if start < 0 || !bytes.Equal(schema[start:end], quoted) {
		return "", 0, fmt.Errorf("at byte %d: cannot locate key %q (write it without escapes)", end, key)
	}
	return key, start, nil
}

func skipValue(dec *json.Decoder) error {
	var raw json.RawMessage
	return dec.Decode(&raw)
}
