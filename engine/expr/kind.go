package expr

// Kind is the output type an expression must have: when, deny_if and where expressions are
// Bool; enrichment values are String or Any.
type Kind int

// Output kinds.
const (
	Bool Kind = iota
	String
	Any
)

func (k Kind) String() string {
	switch k {
	case Bool:
		return "bool"
	case String:
		return "string"
	case Any:
		return "any"
	}
	return "unknown"
}
