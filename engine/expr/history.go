package expr

import (
	"reflect"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"

	"github.com/agentd-dev/agentd/engine/op"
)

// historyStep is one executed step of a history as CEL reads it: the object
// {step_id, namespace, agent_name, capability, status, labels} of an op.HistoryStep,
// its fields read in place. Reading a field builds no map, so a rule that walks a long
// history costs no allocation per step but the values it reads; whatever else a map
// does (equality, iteration over keys, conversion, a key of another type) is done by
// the map of the step's fields, built then.
type historyStep struct{ h *op.HistoryStep }

var _ traits.Mapper = historyStep{}

// historyFields is the number of fields of a historyStep.
const historyFields = 6

// Find implements traits.Mapper.
func (s historyStep) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		return s.asMap().Find(key)
	}
	switch k {
	case "step_id":
		return types.String(s.h.StepID), true
	case "namespace":
		return types.String(s.h.Namespace), true
	case "agent_name":
		return types.String(s.h.AgentName), true
	case "capability":
		return types.String(s.h.Capability), true
	case "status":
		return types.String(s.h.Status), true
	case "labels":
		return types.NewStringList(types.DefaultTypeAdapter, s.h.Labels), true
	}
	return nil, false
}

// Get implements traits.Indexer.
func (s historyStep) Get(key ref.Val) ref.Val {
	v, found := s.Find(key)
	if !found {
		return types.ValOrErr(v, "no such key: %v", key)
	}
	return v
}

// Contains implements traits.Container.
func (s historyStep) Contains(key ref.Val) ref.Val {
	v, found := s.Find(key)
	if !found && types.IsError(v) {
		return v
	}
	return types.Bool(found)
}

// Size implements traits.Sizer.
func (historyStep) Size() ref.Val { return types.Int(historyFields) }

// Iterator implements traits.Iterable.
func (s historyStep) Iterator() traits.Iterator { return s.asMap().Iterator() }

// ConvertToNative implements ref.Val.
func (s historyStep) ConvertToNative(t reflect.Type) (any, error) {
	return s.asMap().ConvertToNative(t)
}

// ConvertToType implements ref.Val.
func (s historyStep) ConvertToType(t ref.Type) ref.Val {
	if t == types.MapType {
		return s
	}
	return s.asMap().ConvertToType(t)
}

// Equal implements ref.Val.
func (s historyStep) Equal(other ref.Val) ref.Val { return s.asMap().Equal(other) }

// Type implements ref.Val.
func (historyStep) Type() ref.Type { return types.MapType }

// Value implements ref.Val: the map of the step's fields.
func (s historyStep) Value() any { return s.fields() }

// IsZeroValue reports whether the value is its type's zero value: a step has fields.
func (historyStep) IsZeroValue() bool { return false }

func (s historyStep) asMap() traits.Mapper {
	return types.NewStringInterfaceMap(types.DefaultTypeAdapter, s.fields())
}

// fields is the step as a JSON-shaped map, what CEL read before historyStep.
func (s historyStep) fields() map[string]any {
	return map[string]any{
		"step_id": s.h.StepID, "namespace": s.h.Namespace, "agent_name": s.h.AgentName,
		"capability": s.h.Capability, "status": s.h.Status, "labels": labelsValue(s.h.Labels),
	}
}
