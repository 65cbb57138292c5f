package inproc

import (
	"errors"
	"hash/maphash"

	"github.com/agentd-dev/agentd/bench/internal/fixture"
	"github.com/agentd-dev/agentd/engine"
)

// MemoHit is a projection, not agentd code: the least a memoized plan review could cost
// on a hit. It hashes the generation and every input path data.agentd.plan can read
// (per step: step_id, namespace, agent_name and metadata.capability) and
// looks the hash up in a map, as a decision memo keyed that way would.
func MemoHit(c PlanCase) Side {
	plan := fixture.Plan(c.Steps, c.Size)
	seed := maphash.MakeSeed()
	key := func(p *engine.RoutingPlan) uint64 {
		var h maphash.Hash
		h.SetSeed(seed)
		h.WriteString("g-0123456789abcdef")
		for i := range p.Steps {
			s := &p.Steps[i]
			h.WriteByte(0)
			h.WriteString(s.StepID)
			h.WriteByte(0)
			h.WriteString(s.Namespace)
			h.WriteByte(0)
			h.WriteString(s.AgentName)
			h.WriteByte(0)
			if capability, ok := s.Metadata["capability"].(string); ok {
				h.WriteString(capability)
			} else {
				h.WriteByte(1)
			}
		}
		return h.Sum64()
	}
	memo := map[uint64]bool{key(plan): true}
	return Side{Name: "memo hit " + c.String(), Op: func() error {
		if !memo[key(plan)] {
			return errors.New("memo miss")
		}
		return nil
	}}
}
