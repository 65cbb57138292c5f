package engine

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/agentd-dev/agentd/engine/ref"
)

// ErrInvalidPlan matches every plan validation failure: errors.Is(err, ErrInvalidPlan)
// holds for each *PlanError ValidatePlan returns.
var ErrInvalidPlan = errors.New("invalid plan")

// PlanCode names one way a plan can break a plan rule (docs/semantics.md §2). Codes are
// stable and safe as metric labels; callers and tests compare codes, never messages.
type PlanCode string

// Plan validation codes.
const (
	PlanCodeNilPlan                      PlanCode = "nil_plan"                       // rule 1
	PlanCodeEmptyPlan                    PlanCode = "empty_plan"                     // rule 1
	PlanCodeUnknownAgent                 PlanCode = "unknown_agent"                  // rule 2
	PlanCodeUnknownCapability            PlanCode = "unknown_capability"             // rule 3
	PlanCodeMissingStepID                PlanCode = "missing_step_id"                // rule 4
	PlanCodeDuplicateStepID              PlanCode = "duplicate_step_id"              // rule 4
	PlanCodeUnknownDependency            PlanCode = "unknown_dependency"             // rule 4
	PlanCodeDependencyCycle              PlanCode = "dependency_cycle"               // rule 4
	PlanCodeMalformedReference           PlanCode = "malformed_reference"            // rule 5
	PlanCodeUnscannableParameters        PlanCode = "unscannable_parameters"         // rule 5
	PlanCodeSelfReference                PlanCode = "self_reference"                 // rule 6
	PlanCodeUndeclaredDependency         PlanCode = "undeclared_dependency"          // rule 6
	PlanCodeUndeclaredImplicitDependency PlanCode = "undeclared_implicit_dependency" // rule 6
	PlanCodeInvalidImplicitDependency    PlanCode = "invalid_implicit_dependency"    // rule 6
	PlanCodeUnknownReferenceTarget       PlanCode = "unknown_reference_target"       // rule 7
	PlanCodeUnknownReturnField           PlanCode = "unknown_return_field"           // rule 7
	PlanCodeRepeatedStepID               PlanCode = "repeated_step_id"               // rule 8
	PlanCodeTooManySteps                 PlanCode = "too_many_steps"                 // rule 0
	PlanCodeTooManyDependencies          PlanCode = "too_many_dependencies"          // rule 0
	PlanCodeTooManyReferences            PlanCode = "too_many_references"            // rule 0
)

// PlanLimits bound the size of a plan, so validation and review cost a bounded amount
// per plan; a plan over a limit breaks rule 0. A zero field takes the default.
type PlanLimits struct {
	// MaxSteps bounds the steps of one plan.
	MaxSteps int
	// MaxDependencies bounds the depends_on and implicit_deps entries of one plan.
	MaxDependencies int
	// MaxReferences bounds the {{step-…}} references in one plan's parameters.
	MaxReferences int
}

// DefaultPlanLimits are the limits of a pipeline that sets none.
var DefaultPlanLimits = PlanLimits{MaxSteps: 256, MaxDependencies: 4096, MaxReferences: 4096}

// withDefaults fills zero fields from DefaultPlanLimits.
func (l PlanLimits) withDefaults() PlanLimits {
	if l.MaxSteps <= 0 {
		l.MaxSteps = DefaultPlanLimits.MaxSteps
	}
	if l.MaxDependencies <= 0 {
		l.MaxDependencies = DefaultPlanLimits.MaxDependencies
	}
	if l.MaxReferences <= 0 {
		l.MaxReferences = DefaultPlanLimits.MaxReferences
	}
	return l
}

// PlanError is the one error type of plan validation. Rule is the plan rule number
// (0–8; rule N is docs/semantics.md §2.N), Code one of the PlanCode constants, StepID
// the offending step (empty for plan-level failures and for a step without an id, whose
// index is then named in Message). It matches ErrInvalidPlan.
type PlanError struct {
	Rule    int
	Code    PlanCode
	StepID  string
	Message string
}

// Error reads like
// `plan rule 4 (unknown_dependency): step "step-2": depends on "step-9", which is not a step of this plan`.
func (e *PlanError) Error() string {
	var b strings.Builder
	b.Grow(32 + len(e.Code) + len(e.StepID) + len(e.Message))
	b.WriteString("plan rule ")
	b.WriteString(strconv.Itoa(e.Rule))
	b.WriteString(" (")
	b.WriteString(string(e.Code))
	b.WriteString("): ")
	if e.StepID != "" {
		b.WriteString("step ")
		b.WriteString(strconv.Quote(e.StepID))
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// Is makes every PlanError match ErrInvalidPlan.
func (e *PlanError) Is(target error) bool { return target == ErrInvalidPlan }

// AsPlanError returns the *PlanError in err's chain, if any.
func AsPlanError(err error) (*PlanError, bool) {
	if err == nil {
		return nil, false // before pe, which escapes to errors.As
	}
	var pe *PlanError
	ok := errors.As(err, &pe)
	return pe, ok
}

// ValidatePlan checks plan against the plan rules (docs/semantics.md §2), within
// DefaultPlanLimits, and returns nil or the first failure as a *PlanError. It never
// repairs or modifies the plan, the catalog or prior. It costs time linear in the size
// of the plan and prior (each limit bounds a term).
//
// prior holds the steps of the completed earlier phases of the same request; a non-empty
// prior (or a PhaseNumber of 2 or more) makes this a phase 2+ plan. catalog may be nil,
// which skips the catalog rules: 2, 3 and the returns part of 7.
//
// Rules run in rule order and, within a rule, over the steps in plan order; the first
// failure wins, so the result is deterministic and never depends on map iteration:
//
//  0. too_many_steps, too_many_dependencies (depends_on and implicit_deps entries
//     together), too_many_references (counted while rule 5 walks the parameters): the
//     plan is over its PlanLimits.
//  1. nil_plan for a nil plan; empty_plan for zero steps unless the plan is terminal
//     (absent terminal counts as true) or needs_user_input is set. A valid empty plan
//     passes every other rule trivially.
//  2. unknown_agent: the catalog has no agent_name in namespace.
//  3. unknown_capability: metadata.capability is a string (the empty string included)
//     that the agent does not expose. A missing or non-string capability is not checked.
//  4. First missing_step_id / duplicate_step_id over all steps (the second use of an id is
//     reported), then unknown_dependency over every depends_on entry in order, then
//     dependency_cycle, reported on the first step in plan order that lies on a cycle
//     (a step depending on itself is a cycle).
//  5. malformed_reference: a {{step-…}} token, or a {{<id>…}} token whose id is a
//     step of this plan or of a prior phase (step ids need not start with step-),
//     anywhere in metadata.parameters (walked recursively, object keys in sorted order,
//     see package ref for the grammar) is not {{<id>.<path>}}; unscannable_parameters:
//     parameters nest deeper than ref.MaxDepth, contain themselves or cannot be encoded
//     as JSON, so their references cannot all be checked.
//  6. Per step, references first and in walk order: self_reference; undeclared_dependency
//     for a reference to a same-plan step missing from depends_on;
//     undeclared_implicit_dependency for a reference to a prior-phase step missing from
//     implicit_deps. Then each implicit_deps entry in order: invalid_implicit_dependency
//     when it names a step of this plan, is not a prior-phase step, or is not referenced
//     by the step's parameters. A reference to a step that exists nowhere is left to
//     rule 7 unless it is also listed in implicit_deps.
//  7. unknown_reference_target: a reference names neither a step of this plan nor a prior
//     step. unknown_return_field: a {{<id>.response.data.<F>…}} reference whose target's
//     capability (looked up by the target's namespace, agent_name and
//     metadata.capability) declares a non-empty returns list without F.
//  8. repeated_step_id: in phase 2+, a step reuses the id of an already executed step.
//
// Same-plan ids take precedence over prior ids when a reference is resolved; rule 8 then
// rejects the reuse.
func ValidatePlan(plan *RoutingPlan, catalog *Catalog, prior []RoutingStep) error {
	return validatePlan(plan, catalog, prior, DefaultPlanLimits)
}

// ValidatePlan checks plan as the package's ValidatePlan does, against the pipeline's
// catalog and plan limits: the validation every incoming and every mutated plan of the
// pipeline gets.
func (p *Pipeline) ValidatePlan(plan *RoutingPlan, prior []RoutingStep) error {
	return validatePlan(plan, p.catalog, prior, p.limits)
}

func validatePlan(plan *RoutingPlan, catalog *Catalog, prior []RoutingStep, limits PlanLimits) error {
	if plan == nil {
		return &PlanError{Rule: 1, Code: PlanCodeNilPlan, Message: "plan is nil"}
	}
	if len(plan.Steps) == 0 {
		if plan.IsTerminal() || plan.NeedsUserInput != nil {
			return nil
		}
		return &PlanError{Rule: 1, Code: PlanCodeEmptyPlan,
			Message: "plan has no steps but is not terminal and does not ask for user input"}
	}
	v := planValidator{steps: plan.Steps, catalog: catalog, prior: prior, limits: limits.withDefaults()}
	if err := v.checkSize(); err != nil {
		return err
	}
	if err := v.checkAgents(); err != nil {
		return err
	}
	if err := v.checkCapabilities(); err != nil {
		return err
	}
	if err := v.checkStepGraph(); err != nil {
		return err
	}
	var refBuf [8]planStepRef
	refs, err := v.collectReferences(refBuf[:0])
	if err != nil {
		return err
	}
	v.refs = refs
	if err := v.checkDeclarations(); err != nil {
		return err
	}
	if err := v.checkTargets(); err != nil {
		return err
	}
	return v.checkRepeatedIDs()
}

// planValidator holds the per-call state of ValidatePlan. It only reads the plan.
type planValidator struct {
	steps   []RoutingStep
	catalog *Catalog
	prior   []RoutingStep
	ids     map[string]int // plan step id -> index; nil for small plans (linear lookup)
	priorID map[string]int // prior step id -> index of its first occurrence, built lazily
	refs    []planStepRef  // every reference, grouped by step in plan order
	limits  PlanLimits
}

// Rule 0, steps and dependencies (references are counted by rule 5).
func (v *planValidator) checkSize() error {
	if n := len(v.steps); n > v.limits.MaxSteps {
		return &PlanError{Rule: 0, Code: PlanCodeTooManySteps,
			Message: "plan has " + strconv.Itoa(n) + " steps; the limit is " + strconv.Itoa(v.limits.MaxSteps)}
	}
	deps := 0
	for i := range v.steps {
		deps += len(v.steps[i].DependsOn) + len(v.steps[i].ImplicitDeps)
	}
	if deps > v.limits.MaxDependencies {
		return &PlanError{Rule: 0, Code: PlanCodeTooManyDependencies,
			Message: "plan has " + strconv.Itoa(deps) + " dependencies; the limit is " + strconv.Itoa(v.limits.MaxDependencies)}
	}
	return nil
}

// planLinearLookup is the step count up to which ids are found by a linear scan,
// which for a typical plan is faster than building a map and allocates nothing.
const planLinearLookup = 16

type planStepRef struct {
	step int
	ref  ref.Ref
}

// fail builds the error for step i; a step without an id is named by its index.
func (v *planValidator) fail(rule int, code PlanCode, i int, msg string) *PlanError {
	id := v.steps[i].StepID
	if id == "" {
		msg = "step at index " + strconv.Itoa(i) + " (no step_id): " + msg
	}
	return &PlanError{Rule: rule, Code: code, StepID: id, Message: msg}
}

// Rule 2.
func (v *planValidator) checkAgents() error {
	if v.catalog == nil {
		return nil
	}
	for i := range v.steps {
		s := &v.steps[i]
		if !v.catalog.Agent(s.Namespace, s.AgentName) {
			return v.fail(2, PlanCodeUnknownAgent, i, "agent "+strconv.Quote(s.AgentName)+
				" in namespace "+strconv.Quote(s.Namespace)+" is not in the catalog")
		}
	}
	return nil
}

// Rule 3.
func (v *planValidator) checkCapabilities() error {
	if v.catalog == nil {
		return nil
	}
	for i := range v.steps {
		s := &v.steps[i]
		name, ok := s.Metadata["capability"].(string)
		if !ok {
			continue
		}
		if _, ok := v.catalog.capability(s.Namespace, s.AgentName, name); !ok {
			return v.fail(3, PlanCodeUnknownCapability, i, "agent "+strconv.Quote(s.AgentName)+
				" in namespace "+strconv.Quote(s.Namespace)+" has no capability "+strconv.Quote(name))
		}
	}
	return nil
}

// Rule 4.
func (v *planValidator) checkStepGraph() error {
	if len(v.steps) > planLinearLookup {
		v.ids = make(map[string]int, len(v.steps))
	}
	for i := range v.steps {
		id := v.steps[i].StepID
		if id == "" {
			return v.fail(4, PlanCodeMissingStepID, i, "step_id is empty")
		}
		if j, dup := v.stepIndex(id); dup && j < i {
			return v.fail(4, PlanCodeDuplicateStepID, i,
				"step_id is already used by the step at index "+strconv.Itoa(j))
		}
		if v.ids != nil {
			v.ids[id] = i
		}
	}
	for i := range v.steps {
		for _, d := range v.steps[i].DependsOn {
			if _, ok := v.stepIndex(d); !ok {
				return v.fail(4, PlanCodeUnknownDependency, i,
					"depends on "+strconv.Quote(d)+", which is not a step of this plan")
			}
		}
	}
	if !v.hasCycle() {
		return nil
	}
	i := v.firstOnCycle()
	return v.fail(4, PlanCodeDependencyCycle, i, "depends_on forms a cycle: "+v.describeCycle(v.cycleThrough(i)))
}

// firstOnCycle returns the first step in plan order that lies on a depends_on cycle:
// the first step of a strongly connected component with more than one step or with an
// edge to itself (Tarjan's algorithm, iterative, linear in steps and edges).
func (v *planValidator) firstOnCycle() int {
	n := len(v.steps)
	index, low, comp := make([]int, n), make([]int, n), make([]int, n)
	for i := range index {
		index[i], comp[i] = -1, -1
	}
	onCycle := make([]bool, n)
	var stack []int
	onStack := make([]bool, n)
	type frame struct{ node, next int }
	var frames []frame
	counter := 0
	for root := range v.steps {
		if index[root] >= 0 {
			continue
		}
		frames = append(frames, frame{node: root})
		index[root], low[root] = counter, counter
		counter++
		stack, onStack[root] = append(stack, root), true
		for len(frames) > 0 {
			f := &frames[len(frames)-1]
			deps := v.steps[f.node].DependsOn
			if f.next < len(deps) {
				d, _ := v.stepIndex(deps[f.next])
				f.next++
				if d == f.node {
					onCycle[d] = true
				}
				switch {
				case index[d] < 0:
					index[d], low[d] = counter, counter
					counter++
					stack, onStack[d] = append(stack, d), true
					frames = append(frames, frame{node: d})
				case onStack[d]:
					low[f.node] = min(low[f.node], index[d])
				}
				continue
			}
			u := f.node
			frames = frames[:len(frames)-1]
			if len(frames) > 0 {
				parent := frames[len(frames)-1].node
				low[parent] = min(low[parent], low[u])
			}
			if low[u] != index[u] {
				continue
			}
			size := 0
			for k := len(stack) - 1; ; k-- {
				size++
				if stack[k] == u {
					break
				}
			}
			for _, w := range stack[len(stack)-size:] {
				onStack[w] = false
				if size > 1 {
					onCycle[w] = true
				}
			}
			stack = stack[:len(stack)-size]
		}
	}
	for i, c := range onCycle {
		if c {
			return i
		}
	}
	return 0
}

const (
	dfsWhite uint8 = iota
	dfsGray
	dfsBlack
)

// hasCycle reports whether depends_on has a cycle, by iterative depth-first search with
// colors. Every depends_on id is known to resolve.
func (v *planValidator) hasCycle() bool {
	type frame struct{ node, next int }
	var colorBuf [32]uint8
	var stackBuf [32]frame
	color := colorBuf[:0]
	color = append(color, make([]uint8, len(v.steps))...)
	stack := stackBuf[:0]
	for root := range v.steps {
		if color[root] != dfsWhite {
			continue
		}
		color[root] = dfsGray
		stack = append(stack, frame{node: root})
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			deps := v.steps[top.node].DependsOn
			if top.next == len(deps) {
				color[top.node] = dfsBlack
				stack = stack[:len(stack)-1]
				continue
			}
			d, _ := v.stepIndex(deps[top.next])
			top.next++
			switch color[d] {
			case dfsGray:
				return true
			case dfsWhite:
				color[d] = dfsGray
				stack = append(stack, frame{node: d})
			}
		}
	}
	return false
}

// cycleThrough returns a shortest depends_on cycle from step i back to itself, as step
// indexes starting and ending with i, or nil when i is on no cycle.
func (v *planValidator) cycleThrough(i int) []int {
	parent := make([]int, len(v.steps))
	for k := range parent {
		parent[k] = -1
	}
	queue := []int{i}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, dep := range v.steps[u].DependsOn {
			d, _ := v.stepIndex(dep)
			if d == i {
				path := []int{i}
				for n := u; n != i; n = parent[n] {
					path = append(path, n)
				}
				path = append(path, i)
				slices.Reverse(path[1 : len(path)-1])
				return path
			}
			if parent[d] == -1 {
				parent[d] = u
				queue = append(queue, d)
			}
		}
	}
	return nil
}

// maxCycleShown bounds how many ids a dependency_cycle message lists.
const maxCycleShown = 10

func (v *planValidator) describeCycle(cycle []int) string {
	var b strings.Builder
	for k, n := range cycle {
		if k > 0 {
			b.WriteString(" -> ")
		}
		if k == maxCycleShown {
			b.WriteString("...")
			break
		}
		b.WriteString(strconv.Quote(v.steps[n].StepID))
	}
	return b.String()
}

// errPlanWalkStop ends a parameters walk at the first unscannable string, or when the
// references are over the limit (errTooManyReferences).
var (
	errPlanWalkStop      = errors.New("stop walking")
	errTooManyReferences = errors.New("too many references")
)

// known reports whether id names a step of this plan or of a prior phase.
func (v *planValidator) known(id string) bool { return v.inPlan(id) || v.inPrior(id) }

// Rule 5. It also returns every reference, appended to refs, for rules 6 and 7.
func (v *planValidator) collectReferences(refs []planStepRef) ([]planStepRef, error) {
	for i := range v.steps {
		params, ok := v.steps[i].Metadata["parameters"]
		if !ok || params == nil {
			continue
		}
		var scanErr error
		var scanPath string
		err := ref.Walk(params, func(path []byte, s string) error {
			found, err := ref.ScanFor(s, v.known)
			if err != nil {
				scanErr, scanPath = err, string(path)
				return errPlanWalkStop
			}
			if len(refs)+len(found) > v.limits.MaxReferences {
				scanErr = errTooManyReferences
				return errPlanWalkStop
			}
			for _, r := range found {
				refs = append(refs, planStepRef{step: i, ref: r})
			}
			return nil
		})
		if err == nil {
			continue
		}
		if scanErr == errTooManyReferences {
			return nil, &PlanError{Rule: 0, Code: PlanCodeTooManyReferences,
				Message: "plan has more than " + strconv.Itoa(v.limits.MaxReferences) + " references; that is the limit"}
		}
		if bad, ok := scanErr.(*ref.MalformedError); ok {
			return nil, v.fail(5, PlanCodeMalformedReference, i, "malformed reference "+strconv.Quote(bad.Token)+
				" at parameters"+scanPath+": "+bad.Reason)
		}
		if scanErr != nil {
			err = scanErr
		}
		return nil, v.fail(5, PlanCodeUnscannableParameters, i, "parameters cannot be scanned for references: "+err.Error())
	}
	return refs, nil
}

// stepRefs returns the references of step i; from is where the previous step's
// references ended, and next is where step i's end. Steps must be visited in order.
func (v *planValidator) stepRefs(i, from int) (refs []planStepRef, next int) {
	next = from
	for next < len(v.refs) && v.refs[next].step == i {
		next++
	}
	return v.refs[from:next], next
}

// stepIndex returns the index of the plan step with this id. Before rule 4 has passed
// it returns the first step with the id.
func (v *planValidator) stepIndex(id string) (int, bool) {
	if v.ids != nil {
		i, ok := v.ids[id]
		return i, ok
	}
	for i := range v.steps {
		if v.steps[i].StepID == id {
			return i, true
		}
	}
	return -1, false
}

func (v *planValidator) inPlan(id string) bool {
	_, ok := v.stepIndex(id)
	return ok
}

// priorIndex returns the index of the first prior step with this id.
func (v *planValidator) priorIndex(id string) (int, bool) {
	if len(v.prior) <= planLinearLookup {
		for k := range v.prior {
			if v.prior[k].StepID == id {
				return k, true
			}
		}
		return -1, false
	}
	if v.priorID == nil {
		v.priorID = make(map[string]int, len(v.prior))
		for k := range v.prior {
			if _, seen := v.priorID[v.prior[k].StepID]; !seen {
				v.priorID[v.prior[k].StepID] = k
			}
		}
	}
	k, ok := v.priorID[id]
	return k, ok
}

func (v *planValidator) inPrior(id string) bool {
	_, ok := v.priorIndex(id)
	return ok
}

// target returns the step a reference names: a step of this plan, else a prior step.
func (v *planValidator) target(id string) (*RoutingStep, bool) {
	if i, ok := v.stepIndex(id); ok {
		return &v.steps[i], true
	}
	if k, ok := v.priorIndex(id); ok {
		return &v.prior[k], true
	}
	return nil, false
}

// Rule 6.
func (v *planValidator) checkDeclarations() error {
	next := 0
	for i := range v.steps {
		s := &v.steps[i]
		var refs []planStepRef
		refs, next = v.stepRefs(i, next)
		dependsOn, implicit := newIDSet(s.DependsOn, len(refs)), newIDSet(s.ImplicitDeps, len(refs))
		var referenced idSet
		if len(s.ImplicitDeps) > 0 {
			ids := make([]string, len(refs))
			for k, r := range refs {
				ids[k] = r.ref.StepID
			}
			referenced = newIDSet(ids, len(s.ImplicitDeps))
		}
		for _, r := range refs {
			id := r.ref.StepID
			switch {
			case id == s.StepID:
				return v.fail(6, PlanCodeSelfReference, i, "reference "+strconv.Quote(r.ref.Raw)+" names the step itself")
			case v.inPlan(id):
				if !dependsOn.has(id) {
					return v.fail(6, PlanCodeUndeclaredDependency, i, "reference "+strconv.Quote(r.ref.Raw)+
						" names step "+strconv.Quote(id)+" of this plan, which is not listed in depends_on")
				}
			case v.inPrior(id):
				if !implicit.has(id) {
					return v.fail(6, PlanCodeUndeclaredImplicitDependency, i, "reference "+strconv.Quote(r.ref.Raw)+
						" names prior-phase step "+strconv.Quote(id)+", which is not listed in implicit_deps")
				}
			}
		}
		for _, d := range s.ImplicitDeps {
			var why string
			switch {
			case v.inPlan(d):
				why = "is a step of this plan; same-plan dependencies belong in depends_on"
			case !v.inPrior(d):
				why = "is not a step of a completed prior phase"
			case !referenced.has(d):
				why = "is not referenced by the step's parameters"
			default:
				continue
			}
			return v.fail(6, PlanCodeInvalidImplicitDependency, i, "implicit_deps entry "+strconv.Quote(d)+" "+why)
		}
	}
	return nil
}

// Rule 7.
func (v *planValidator) checkTargets() error {
	for _, r := range v.refs {
		t, ok := v.target(r.ref.StepID)
		if !ok {
			return v.fail(7, PlanCodeUnknownReferenceTarget, r.step, "reference "+strconv.Quote(r.ref.Raw)+
				" names "+strconv.Quote(r.ref.StepID)+", which is neither a step of this plan nor of a completed prior phase")
		}
		field, ok := returnField(r.ref.Path)
		if !ok || v.catalog == nil {
			continue
		}
		name, ok := t.Metadata["capability"].(string)
		if !ok {
			continue
		}
		c, ok := v.catalog.capability(t.Namespace, t.AgentName, name)
		if !ok || len(c.Returns) == 0 || slices.Contains(c.Returns, field) {
			continue
		}
		return v.fail(7, PlanCodeUnknownReturnField, r.step, "reference "+strconv.Quote(r.ref.Raw)+
			" reads field "+strconv.Quote(field)+", but capability "+strconv.Quote(name)+" of agent "+
			strconv.Quote(t.AgentName)+" returns only "+strings.Join(c.Returns, ", "))
	}
	return nil
}

// returnField returns F for a reference path response.data.F[...].
func returnField(path []string) (string, bool) {
	if len(path) < 3 || path[0] != "response" || path[1] != "data" {
		return "", false
	}
	return path[2], true
}

// Rule 8.
func (v *planValidator) checkRepeatedIDs() error {
	for i := range v.steps {
		if v.inPrior(v.steps[i].StepID) {
			return v.fail(8, PlanCodeRepeatedStepID, i, "step_id was already executed in a prior phase")
		}
	}
	return nil
}

// idSet answers membership in a list of ids: by a linear scan for a few lookups in a
// short list, through a map otherwise, so a step's checks stay linear in its size.
type idSet struct {
	list []string
	set  map[string]struct{}
}

// newIDSet returns the set of ids that about lookups membership questions will ask.
func newIDSet(ids []string, lookups int) idSet {
	if len(ids) <= planLinearLookup || lookups <= planLinearLookup {
		return idSet{list: ids}
	}
	set := make(map[string]struct{}, len(ids))
	for _, id := range ids {
		set[id] = struct{}{}
	}
	return idSet{set: set}
}

func (s idSet) has(id string) bool {
	if s.set != nil {
		_, ok := s.set[id]
		return ok
	}
	return slices.Contains(s.list, id)
}
