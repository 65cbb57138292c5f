package engine

import "github.com/agentd-dev/agentd/engine/jsonread"

// The JSON names each reader here reads, in its order.
var (
	planFields = jsonread.Fields[RoutingPlan]([]string{"plan_id", "original_request", "mode", "steps", "created_at", "terminal",
		"continuation_note", "phase_number"}, "needs_user_input")
	stepFields = jsonread.Fields[RoutingStep]([]string{"step_id", "agent_name", "namespace", "instruction", "depends_on",
		"implicit_deps", "metadata"})
	stateFields = jsonread.Fields[RequestState]([]string{"id", "generation", "request", "metadata", "enrichments",
		"cache_vary", "cache_read_disabled", "phases_independent", "invalid_plan_fails", "lifecycle", "opened_at",
		"prior_steps", "phase", "phase_plan_id", "phase_hash", "phase_start", "runs", "labels", "history", "reported",
		"phase_flows", "held", "hold_of", "revision", "traceparent"})
	runFields     = jsonread.Fields[StepRun]([]string{"status", "retryable", "attempts", "response", "labels"})
	historyFields = jsonread.Fields[HistoryStep]([]string{"step_id", "namespace", "agent_name", "capability", "status", "labels"})
	flowFields    = jsonread.Fields[PhaseFlow]([]string{"start", "reported", "labels"})
)

// ReadPlan reads a RoutingPlan on jsonread's fast path: into dst, as encoding/json
// decodes one with DisallowUnknownFields, or false for a text outside the subset
// (needs_user_input among them), which the caller then decodes with encoding/json.
func ReadPlan(r *jsonread.Reader, dst **RoutingPlan) bool {
	p := new(RoutingPlan)
	*dst = p
	return r.Struct(planFields, func(i int) bool {
		switch i {
		case 0:
			return r.String(&p.PlanID)
		case 1:
			return r.String(&p.OriginalRequest)
		case 2:
			return r.String((*string)(&p.Mode))
		case 3:
			return readSlice(r, &p.Steps, readStep)
		case 4:
			return r.Time(&p.CreatedAt)
		case 5:
			p.Terminal = new(bool)
			return r.Bool(p.Terminal)
		case 6:
			return r.String(&p.ContinuationNote)
		default:
			return r.Int(&p.PhaseNumber)
		}
	})
}

// readStep reads one step of a plan into s, which is zero.
func readStep(r *jsonread.Reader, s *RoutingStep) bool {
	return r.Struct(stepFields, func(i int) bool {
		switch i {
		case 0:
			return r.String(&s.StepID)
		case 1:
			return r.String(&s.AgentName)
		case 2:
			return r.String(&s.Namespace)
		case 3:
			return r.String(&s.Instruction)
		case 4:
			return r.Strings(&s.DependsOn)
		case 5:
			return r.Strings(&s.ImplicitDeps)
		default:
			return r.Map(&s.Metadata)
		}
	})
}

// readSlice reads an array into *dst as encoding/json decodes one into a nil slice (an
// empty array too is a slice, not nil), each element with elem from its zero value.
func readSlice[T any](r *jsonread.Reader, dst *[]T, elem func(*jsonread.Reader, *T) bool) bool {
	*dst = make([]T, 0, 4) // most arrays of a plan or state hold a few elements
	return r.Array(func() bool {
		*dst = append(*dst, *new(T))
		return elem(r, &(*dst)[len(*dst)-1])
	})
}

// ReadState reads a RequestState on jsonread's fast path: into st, which is zero, as
// json.Unmarshal decodes one, or false for a text outside the subset (an unknown member
// among them, which json.Unmarshal ignores), which the caller then decodes with
// encoding/json into a zero state.
func ReadState(r *jsonread.Reader, st *RequestState) bool {
	return r.Struct(stateFields, func(i int) bool {
		switch i {
		case 0:
			return r.String(&st.ID)
		case 1:
			return r.String(&st.Generation)
		case 2:
			return r.String(&st.Request)
		case 3:
			return r.Map(&st.Metadata)
		case 4:
			return r.Map(&st.Enrichments)
		case 5:
			return readStringMap(r, &st.CacheVary)
		case 6:
			return r.Bool(&st.CacheReadDisabled)
		case 7:
			return r.Bool(&st.PhasesIndependent)
		case 8:
			return r.Bool(&st.InvalidPlanFails)
		case 9:
			return r.String((*string)(&st.Lifecycle))
		case 10:
			return r.Time(&st.OpenedAt)
		case 11:
			return readSlice(r, &st.PriorSteps, readStep)
		case 12:
			return r.Int(&st.Phase)
		case 13:
			return r.String(&st.PhasePlanID)
		case 14:
			return r.String(&st.PhaseHash)
		case 15:
			return r.Int(&st.PhaseStart)
		case 16:
			return ReadRuns(r, &st.Runs)
		case 17:
			return r.Strings(&st.Labels)
		case 18:
			return readSlice(r, &st.History, readHistoryStep)
		case 19:
			return r.Int(&st.Reported)
		case 20:
			return readSlice(r, &st.PhaseFlows, readPhaseFlow)
		case 21:
			return r.Strings(&st.Held)
		case 22:
			return r.String(&st.HoldOf)
		case 23:
			var n int // an int64 beyond int's range is outside the subset
			ok := r.Int(&n)
			st.Revision = int64(n)
			return ok
		default:
			return r.String(&st.TraceParent)
		}
	})
}

// ReadRuns reads a state's step runs on jsonread's fast path, as json.Unmarshal decodes
// them into *dst: null sets it to nil, an object's members go into it (a new map when
// it is nil), the last of duplicate step ids winning. For a text outside the subset
// it reports false.
func ReadRuns(r *jsonread.Reader, dst *map[string]*StepRun) bool {
	if r.Null() {
		*dst = nil
		return true
	}
	if *dst == nil {
		*dst = make(map[string]*StepRun)
	}
	runs := *dst
	return r.Object(func(id []byte) bool {
		if r.Null() {
			runs[string(id)] = nil
			return true
		}
		run := new(StepRun)
		runs[string(id)] = run
		return r.Struct(runFields, func(i int) bool {
			switch i {
			case 0:
				return r.String((*string)(&run.Status))
			case 1:
				return r.Bool(&run.Retryable)
			case 2:
				return r.Int(&run.Attempts)
			case 3:
				return r.Value(&run.Response)
			default:
				return r.Strings(&run.Labels)
			}
		})
	})
}

// readHistoryStep reads one reported finish into h, which is zero.
func readHistoryStep(r *jsonread.Reader, h *HistoryStep) bool {
	return r.Struct(historyFields, func(i int) bool {
		switch i {
		case 0:
			return r.String(&h.StepID)
		case 1:
			return r.String(&h.Namespace)
		case 2:
			return r.String(&h.AgentName)
		case 3:
			return r.String(&h.Capability)
		case 4:
			return r.String(&h.Status)
		default:
			return r.Strings(&h.Labels)
		}
	})
}

// readPhaseFlow reads one phase's flow into f, which is zero.
func readPhaseFlow(r *jsonread.Reader, f *PhaseFlow) bool {
	return r.Struct(flowFields, func(i int) bool {
		switch i {
		case 0:
			return r.Int(&f.Start)
		case 1:
			return r.Int(&f.Reported)
		default:
			return r.Strings(&f.Labels)
		}
	})
}

// readStringMap reads an object of strings into *dst, which is nil, as encoding/json
// decodes one into a nil map (the last of duplicate keys winning).
func readStringMap(r *jsonread.Reader, dst *map[string]string) bool {
	m := map[string]string{}
	*dst = m
	return r.Object(func(key []byte) bool {
		var s string
		ok := r.String(&s)
		m[string(key)] = s
		return ok
	})
}
