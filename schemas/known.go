package schemas

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
)

// rawSchemas are the embedded schema files decoded as JSON, by file name.
var rawSchemas = sync.OnceValue(func() map[string]any {
	out := map[string]any{}
	for _, name := range Names() {
		var v any
		if json.Unmarshal(File(name), &v) == nil {
			out[name] = v
		}
	}
	return out
})

// knownProperties returns the property names the schema at schemaURL declares (an
// embedded schema's URL with a JSON pointer fragment, such as
// ...hookset.schema.json#/$defs/hook), sorted; nil when there are none or the location
// is not in an embedded schema.
func knownProperties(schemaURL string) []string {
	file, ptr, ok := strings.Cut(strings.TrimPrefix(schemaURL, baseURL), "#")
	if !ok {
		return nil
	}
	node := rawSchemas()[file]
	var segs []string
	if ptr != "" {
		segs = strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	}
	for _, seg := range segs {
		seg = strings.NewReplacer("~1", "/", "~0", "~").Replace(seg)
		switch n := node.(type) {
		case map[string]any:
			node = n[seg]
		case []any:
			i := 0
			for _, r := range seg {
				i = i*10 + int(r-'0')
			}
			if i < 0 || i >= len(n) {
				return nil
			}
			node = n[i]
		default:
			return nil
		}
	}
	obj, _ := node.(map[string]any)
	props, _ := obj["properties"].(map[string]any)
	var out []string
	for k := range props {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
