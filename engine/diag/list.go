package diag

import (
	"cmp"
	"errors"
	"slices"
	"strconv"
)

// List is every error of one load, as one error value. Loaders return it only when it
// is non-empty, after Normalize.
type List []*Error

// Error is the first error followed by "(and N more)", where N counts the errors
// Normalize dropped too.
func (l List) Error() string {
	first, total := -1, 0
	for i, e := range l {
		if e == nil {
			continue
		}
		if first < 0 {
			first = i
		}
		total += e.weight()
	}
	switch {
	case first < 0:
		return "no errors"
	case total <= 1:
		return l[first].Error()
	default:
		return l[first].Error() + " (and " + strconv.Itoa(total-1) + " more)"
	}
}

// Unwrap returns the entries, so errors.As finds the first *Error of a List.
func (l List) Unwrap() []error {
	errs := make([]error, 0, len(l))
	for _, e := range l {
		if e != nil {
			errs = append(errs, e)
		}
	}
	return errs
}

// Kinds returns the Kind of every entry, in list order.
func (l List) Kinds() []Kind {
	kinds := make([]Kind, 0, len(l))
	for _, e := range l {
		if e != nil {
			kinds = append(kinds, e.Kind)
		}
	}
	return kinds
}

// Normalize returns a new List sorted by file, line, column, kind and message, without
// nil entries and exact duplicates, and with at most max errors; max <= 0 means no cap.
// When errors are dropped, one final KindTooManyErrors entry says how many. Normalize
// owns those entries: it merges any already in l into the one it emits, so normalizing
// twice gives the same result. The receiver is not modified; entries are shared.
func (l List) Normalize(max int) List {
	out := make(List, 0, len(l))
	dropped := 0
	for _, e := range l {
		switch {
		case e == nil:
		case e.Kind == KindTooManyErrors:
			dropped += e.dropped
		default:
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, compare)
	out = slices.CompactFunc(out, func(a, b *Error) bool { return compare(a, b) == 0 })
	if max > 0 && len(out) > max {
		dropped += len(out) - max
		clear(out[max:])
		out = out[:max]
	}
	if dropped > 0 {
		out = append(out, &Error{
			Kind:    KindTooManyErrors,
			Message: "too many errors: " + strconv.Itoa(dropped) + " more not shown",
			dropped: dropped,
		})
	}
	return out
}

// weight is how many errors an entry stands for.
func (e *Error) weight() int {
	if e.Kind == KindTooManyErrors && e.dropped > 0 {
		return e.dropped
	}
	return 1
}

// compare orders errors by position first; two errors compare equal only when every
// exported field is equal.
func compare(a, b *Error) int {
	return cmp.Or(
		cmp.Compare(a.File, b.File),
		cmp.Compare(a.Line, b.Line),
		cmp.Compare(a.Column, b.Column),
		cmp.Compare(a.Kind, b.Kind),
		cmp.Compare(a.Message, b.Message),
		cmp.Compare(a.Field, b.Field),
	)
}

// AsList returns the List in err's chain, or a one-entry List for a lone *Error.
func AsList(err error) (List, bool) {
	var l List
	if errors.As(err, &l) {
		return l, true
	}
	var e *Error
	if errors.As(err, &e) && e != nil {
		return List{e}, true
	}
	return nil, false
}
