package schemas

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Violation is one reason a document does not match its schema.
//
// Path is the location of the offending value as object keys and array indexes
// (strconv.Itoa), the segments of Pointer unescaped; an empty Path is the document
// itself. For an unexpected key (keyword additionalProperties, or a `false` property
// schema) Path ends with that key, so the caller can point at the key; in a HookSet an
// unknown action is such a key at /hooks/N/steps/M/<name>.
//
// Keyword is the JSON Schema keyword that failed: "required", "additionalProperties",
// "enum", "type", "pattern", "maxProperties", ...; "false" when a `false` subschema
// rejected the value; "anyOf"/"oneOf" for a choice between required properties, which
// is reported once rather than once per branch. Message is English and names the
// property or the allowed values, e.g. `missing property "stage"`.
type Violation struct {
	Pointer string
	Path    []string
	Keyword string
	Message string
	// Known are, for an unexpected key (additionalProperties), the property names
	// the schema declares there, sorted, for suggesting what was meant.
	Known []string
}

// Validate checks doc against s and returns the leaf violations, sorted by path
// (array indexes numerically), keyword and message, without duplicates; nil means
// doc is valid.
//
// doc is a value as encoding/json or yaml.v3 decode into an `any`. Values JSON has no
// type for are converted first, on a copy: a yaml.v3 timestamp becomes its RFC 3339
// string, a mapping with non-string keys a map keyed by fmt.Sprint of each key.
func Validate(s *jsonschema.Schema, doc any) []Violation {
	err := s.Validate(jsonValue(doc))
	if err == nil {
		return nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return []Violation{violation(nil, "", err.Error())}
	}
	var out []Violation
	collect(verr, &out)
	slices.SortFunc(out, compareViolations)
	return slices.CompactFunc(out, func(a, b Violation) bool { return compareViolations(a, b) == 0 })
}

// collect appends the leaf violations of e. Wrapper kinds (the schema, a group of
// errors, a $ref, allOf) only carry causes.
func collect(e *jsonschema.ValidationError, out *[]Violation) {
	switch k := e.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		known := knownProperties(e.SchemaURL)
		for _, p := range k.Properties {
			v := violation(append(slices.Clone(e.InstanceLocation), p), "additionalProperties",
				fmt.Sprintf("additional property %q is not allowed", p))
			v.Known = known
			*out = append(*out, v)
		}
		return
	case *kind.AnyOf, *kind.OneOf:
		if names, ok := requiredChoice(e); ok {
			quantity := "at least one"
			if _, one := k.(*kind.OneOf); one {
				quantity = "exactly one"
			}
			*out = append(*out, violation(e.InstanceLocation, e.ErrorKind.KeywordPath()[0],
				fmt.Sprintf("%s of %s is required", quantity, quoteAll(names))))
			return
		}
	}
	if len(e.Causes) > 0 {
		for _, c := range e.Causes {
			collect(c, out)
		}
		return
	}
	*out = append(*out, violation(e.InstanceLocation, keyword(e.ErrorKind), describe(e.ErrorKind, e.InstanceLocation)))
}

// requiredChoice reports whether every branch of a failed anyOf/oneOf failed only for
// missing properties at the same location, and returns those properties in order.
func requiredChoice(e *jsonschema.ValidationError) ([]string, bool) {
	if len(e.Causes) == 0 {
		return nil, false
	}
	var names []string
	for _, c := range e.Causes {
		r, ok := c.ErrorKind.(*kind.Required)
		if !ok || len(c.Causes) > 0 || !slices.Equal(c.InstanceLocation, e.InstanceLocation) {
			return nil, false
		}
		names = append(names, r.Missing...)
	}
	return names, true
}

func violation(path []string, kw, msg string) Violation {
	path = slices.Clone(path)
	if path == nil {
		path = []string{}
	}
	return Violation{Pointer: pointer(path), Path: path, Keyword: kw, Message: msg}
}

// keyword names the keyword of a leaf error kind.
func keyword(k jsonschema.ErrorKind) string {
	if _, ok := k.(*kind.FalseSchema); ok {
		return "false"
	}
	if p := k.KeywordPath(); len(p) > 0 {
		return p[0]
	}
	return ""
}

var english = message.NewPrinter(language.English)

// describe renders a leaf error kind in English; kinds our schemas do not produce fall
// back to the library's wording.
func describe(k jsonschema.ErrorKind, path []string) string {
	switch k := k.(type) {
	case *kind.Required:
		if len(k.Missing) == 1 {
			return fmt.Sprintf("missing property %q", k.Missing[0])
		}
		return "missing properties " + quoteAll(k.Missing)
	case *kind.Type:
		return fmt.Sprintf("expected %s, got %s", strings.Join(k.Want, " or "), k.Got)
	case *kind.Enum:
		return enumMessage(k.Want)
	case *kind.Const:
		return "value must be " + display(k.Want)
	case *kind.Pattern:
		return fmt.Sprintf("%q does not match pattern %q", k.Got, k.Want)
	case *kind.Format:
		return fmt.Sprintf("%s is not a valid %s", display(k.Got), k.Want)
	case *kind.MinLength:
		return fmt.Sprintf("must be at least %s long, got %d", plural(k.Want, "character"), k.Got)
	case *kind.MaxLength:
		return fmt.Sprintf("must be at most %s long, got %d", plural(k.Want, "character"), k.Got)
	case *kind.MinItems:
		return fmt.Sprintf("must have at least %s, got %d", plural(k.Want, "item"), k.Got)
	case *kind.MaxItems:
		return fmt.Sprintf("must have at most %s, got %d", plural(k.Want, "item"), k.Got)
	case *kind.MinProperties:
		return fmt.Sprintf("must have at least %s, got %d", plural(k.Want, "property"), k.Got)
	case *kind.MaxProperties:
		return fmt.Sprintf("must have at most %s, got %d", plural(k.Want, "property"), k.Got)
	case *kind.Minimum:
		return fmt.Sprintf("must be at least %s, got %s", k.Want.RatString(), k.Got.RatString())
	case *kind.Maximum:
		return fmt.Sprintf("must be at most %s, got %s", k.Want.RatString(), k.Got.RatString())
	case *kind.FalseSchema:
		if len(path) > 0 {
			return fmt.Sprintf("property %q is not allowed here", path[len(path)-1])
		}
		return "value is not allowed"
	case *kind.OneOf:
		if len(k.Subschemas) == 2 {
			return fmt.Sprintf("value matches more than one alternative (%d and %d)", k.Subschemas[0], k.Subschemas[1])
		}
	}
	return k.LocalizedString(english)
}

func enumMessage(want []any) string {
	if len(want) == 1 {
		return "value must be " + display(want[0])
	}
	parts := make([]string, len(want))
	for i, w := range want {
		parts[i] = display(w)
	}
	return "value must be one of " + strings.Join(parts, ", ")
}

// display renders a JSON value for a message: strings quoted, containers summarized.
func display(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	default:
		return fmt.Sprint(v)
	}
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") {
		return strconv.Itoa(n) + " " + strings.TrimSuffix(noun, "y") + "ies"
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// pointer renders path as a JSON Pointer (RFC 6901).
func pointer(path []string) string {
	var b strings.Builder
	for _, seg := range path {
		b.WriteByte('/')
		b.WriteString(pointerEscaper.Replace(seg))
	}
	return b.String()
}

func compareViolations(a, b Violation) int {
	return cmp.Or(
		slices.CompareFunc(a.Path, b.Path, compareSegments),
		cmp.Compare(a.Keyword, b.Keyword),
		cmp.Compare(a.Message, b.Message),
	)
}

// compareSegments orders array indexes numerically and before object keys.
func compareSegments(a, b string) int {
	ai, aerr := strconv.Atoi(a)
	bi, berr := strconv.Atoi(b)
	switch {
	case aerr == nil && berr == nil:
		return cmp.Compare(ai, bi)
	case aerr == nil:
		return -1
	case berr == nil:
		return 1
	}
	return cmp.Compare(a, b)
}

// jsonValue returns v with the YAML-only values JSON has no type for converted.
func jsonValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = jsonValue(x)
		}
		return m
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[fmt.Sprint(k)] = jsonValue(x)
		}
		return m
	case []any:
		a := make([]any, len(v))
		for i, x := range v {
			a[i] = jsonValue(x)
		}
		return a
	case time.Time:
		return v.Format(time.RFC3339Nano)
	}
	return v
}
