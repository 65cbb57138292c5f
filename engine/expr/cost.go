package expr

import (
	"strconv"

	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
)

// Size bounds assumed by the compile-time cost estimate. CEL cannot know how large the
// request, the metadata or a plan will be, so the estimate assumes that every string or
// bytes value has at most MaxStringSize characters and every list, map or dyn value (a
// metadata entry, a plan field) at most MaxCollectionSize elements. Larger inputs are
// still bounded by the runtime cost limit, which then fails the evaluation instead.
// lists.range() is capped at MaxCollectionSize elements as well.
const (
	MaxStringSize     = 64 << 10
	MaxCollectionSize = 1000
)

var sizeAssumption = "assuming strings of at most " + strconv.Itoa(MaxStringSize) +
	" characters and lists and maps of at most " + strconv.Itoa(MaxCollectionSize) + " elements"

// sizeEstimator is the checker.CostEstimator applying the bounds above; values of any other
// type (numbers, timestamps, types, null) have size 1.
type sizeEstimator struct{}

func (sizeEstimator) EstimateSize(node checker.AstNode) *checker.SizeEstimate {
	t := node.Type()
	if t == nil {
		return nil
	}
	switch t.Kind() {
	case types.StringKind, types.BytesKind:
		return &checker.SizeEstimate{Min: 0, Max: MaxStringSize}
	case types.ListKind, types.MapKind, types.DynKind:
		return &checker.SizeEstimate{Min: 0, Max: MaxCollectionSize}
	}
	return &checker.SizeEstimate{Min: 1, Max: 1}
}

func (sizeEstimator) EstimateCallCost(
	string, string, *checker.AstNode, []checker.AstNode,
) *checker.CallEstimate {
	return nil
}
