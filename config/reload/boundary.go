package reload

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/agentd-dev/agentd/config"
	"github.com/agentd-dev/agentd/engine"
)

// BoundaryError refuses a generation that would weaken the boundary the live one
// enforces: it has no enforcing required after_planning hook while the live one has,
// fewer enforcing guard rules, or a weaker plan binding, and its settings do not state
// allow_boundary_removal: true. With RequirePlanReview, a generation without a
// required hook is refused whatever is live, and Fix names the serve flag that allows
// it. A half-written config (the catalog saved, the hooks not yet) is therefore never
// served.
type BoundaryError struct {
	Losses []string
	// Fix is how to make the change on purpose; empty for the config setting.
	Fix string
}

func (e *BoundaryError) Error() string {
	fix := cmp.Or(e.Fix, "set settings.allow_boundary_removal: true")
	return "boundary: the new generation would " + strings.Join(e.Losses, "; ") +
		". The last good generation keeps serving; to make the change on purpose, " + fix
}

// bindingStrength orders the binding modes, strongest first.
var bindingStrength = map[engine.BindingMode]int{engine.BindingStrict: 2, engine.BindingIdentity: 1, engine.BindingOff: 0}

// enforcedReview returns the required hook of gen when it enforces (a required hook in
// warn or audit mode rejects nothing).
func enforcedReview(gen *config.Generation) (string, bool) {
	for _, h := range gen.Hooks {
		if h.Required && h.Mode.Enforcing() {
			return h.Name, true
		}
	}
	return "", false
}

// enforcingGuards counts the guard rules of gen that enforce.
func enforcingGuards(gen *config.Generation) int {
	n := 0
	for _, g := range gen.Guards {
		if g.Mode.Enforcing() {
			n++
		}
	}
	return n
}

// boundary returns a *BoundaryError when gen may not replace the live generation.
func (r *Reloader) boundary(gen *config.Generation) error {
	_, required := enforcedReview(gen)
	if r.requirePlanReview && !required {
		return &BoundaryError{Losses: []string{"have no enforcing required after_planning hook (a plan review no plan gets past unchecked)"},
			Fix: "start agentd serve with --allow-no-plan-review"}
	}
	live := r.registry.Current()
	if live == nil || gen.AllowBoundaryRemoval {
		return nil
	}
	var losses []string
	if name, ok := enforcedReview(live); ok && !required {
		losses = append(losses, fmt.Sprintf("drop the enforcing required after_planning hook %q", name))
	}
	if n, m := enforcingGuards(live), enforcingGuards(gen); m < n {
		losses = append(losses, fmt.Sprintf("have %d enforcing guard rule(s) where the live generation has %d", m, n))
	}
	if bindingStrength[gen.Binding] < bindingStrength[live.Binding] {
		losses = append(losses, fmt.Sprintf("weaken plan binding from %s to %s", live.Binding, gen.Binding))
	}
	if losses == nil {
		return nil
	}
	return &BoundaryError{Losses: losses}
}
