// Package docs carries the documentation the agentd binary serves: the OpenAPI 3.1
// document of the HTTP API. Its source is openapi.yaml beside this file, written by
// hand and kept in step with the handler by the server's tests; the daemon serves it
// as JSON at GET /v1/openapi.json. The Markdown pages of this folder (semantics.md,
// concepts.md, security-model.md) are for people and are not embedded.
package docs

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"

	"gopkg.in/yaml.v3"
)

//go:embed openapi.yaml
var openAPIYAML []byte

// OpenAPIYAML returns a copy of the OpenAPI document's YAML source.
func OpenAPIYAML() []byte { return append([]byte(nil), openAPIYAML...) }

// OpenAPIJSON returns the OpenAPI document as JSON, converted from its YAML source
// once. The caller must not modify the returned bytes. An embedded document that does
// not convert is a programming error: the first call panics, and the package tests
// catch it.
func OpenAPIJSON() []byte { return openAPIJSON() }

var openAPIJSON = sync.OnceValue(func() []byte {
	b, err := yamlToJSON(openAPIYAML)
	if err != nil {
		panic("docs: openapi.yaml: " + err.Error())
	}
	return b
})

// yamlToJSON converts a YAML document whose mapping keys are all strings to JSON.
func yamlToJSON(src []byte) ([]byte, error) {
	var v any
	if err := yaml.Unmarshal(src, &v); err != nil {
		return nil, err
	}
	if err := checkKeys(v, ""); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// checkKeys reports the first mapping with a key that is not a string (an unquoted
// status code, say), which JSON cannot represent.
func checkKeys(v any, path string) error {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if err := checkKeys(e, path+"/"+k); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range t {
			if err := checkKeys(e, fmt.Sprintf("%s/%d", path, i)); err != nil {
				return err
			}
		}
	case map[any]any:
		return fmt.Errorf("%s: a mapping key is not a string; quote it", path)
	}
	return nil
}
