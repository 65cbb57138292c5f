package viewer

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/op"
	"github.com/agentd-dev/agentd/engine/ref"
)

// Graph is the plan of one phase laid out for drawing: its steps as nodes, placed in
// columns by dependency depth, and an edge from each step another depends on or
// references to that other step. Steps of earlier phases that the plan references
// (implicit dependencies) are nodes too, marked External.
type Graph struct {
	Phase  int    `json:"phase"`
	PlanID string `json:"plan_id,omitempty"`
	// Rejected marks a candidate plan the request's review refused, or one that
	// broke a plan rule.
	Rejected bool   `json:"rejected"`
	Cause    string `json:"cause,omitempty"`
	Nodes    []Node `json:"nodes"`
	Edges    []Edge `json:"edges"`
	// Width and Height are the size of the drawing; every node is a box of
	// NodeWidth by NodeHeight.
	Width      int `json:"width"`
	Height     int `json:"height"`
	NodeWidth  int `json:"node_width"`
	NodeHeight int `json:"node_height"`
}

// Node is one step, with the top-left corner of its box.
type Node struct {
	StepID     string `json:"step_id"`
	Namespace  string `json:"namespace,omitempty"`
	Agent      string `json:"agent_name,omitempty"`
	Capability string `json:"capability,omitempty"`
	// External marks a step of an earlier phase.
	External bool `json:"external,omitempty"`
	// Violations are the codes of the rejection's violations naming the step.
	Violations []string `json:"violations,omitempty"`
	// Denials are the codes of the step's tool_call checks that were refused, in
	// order: a denial's code (a guard's or plan binding's), or guard_error for a guard
	// that failed (fail closed). Set on accepted plans only.
	Denials []string `json:"denials,omitempty"`
	// Labels are the labels the step's reported result got (the finish of its allowed
	// tool_call check, docs/semantics.md §8.21), on an accepted plan's steps and on
	// the earlier phases' steps it draws: what the step's result added to the request.
	Labels []string `json:"labels,omitempty"`
	X      int      `json:"x"`
	Y      int      `json:"y"`
}

// Edge says that To depends on From (DependsOn, an entry of To's depends_on or
// implicit_deps) and/or references its result (Refs, the paths of To's
// {{From.path}} references, in order of appearance).
type Edge struct {
	From      string   `json:"from"`
	To        string   `json:"to"`
	DependsOn bool     `json:"depends_on,omitempty"`
	Refs      []string `json:"refs,omitempty"`
	// Path is the edge's curve, an SVG path: from the right side of From to the left
	// side of To when To is in the next column, else from the bottom of From, below
	// every node, to the bottom of To. LabelX and LabelY place the Refs.
	Path   string `json:"path"`
	LabelX int    `json:"label_x"`
	LabelY int    `json:"label_y"`
}

// Layout sizes, in SVG user units. A node holds five rows: step id, agent,
// capability, violations or denials, and the labels of its result.
const (
	NodeWidth  = 200
	NodeHeight = 94
	colGap     = 150
	rowGap     = 28
	margin     = 16
	laneGap    = 18 // between the curves that pass below the nodes
)

// Graphs returns the plan graph of every phase of rec: each accepted plan and each
// rejected candidate, in phase order (a phase's rejected candidates before its accepted
// plan, as they came). The steps of accepted plans carry their refused checks.
func Graphs(rec *engine.ExecutionRecord) []Graph {
	graphs := []Graph{}
	var prior []engine.RoutingStep
	rejections := slices.Clone(rec.Rejections)
	addRejections := func(upTo int) {
		for len(rejections) > 0 && rejections[0].Phase <= upTo {
			r := rejections[0]
			rejections = rejections[1:]
			g := layout(r.Plan, prior)
			g.Phase, g.Rejected, g.Cause = r.Phase, true, string(r.Cause)
			g.markViolations(r)
			graphs = append(graphs, g)
		}
	}
	for _, ph := range rec.Phases {
		addRejections(ph.Phase)
		g := layout(ph.Plan, prior)
		g.Phase = ph.Phase
		g.markChecks(rec.Operations)
		graphs = append(graphs, g)
		if ph.Plan != nil {
			prior = append(prior, ph.Plan.Steps...)
		}
	}
	addRejections(math.MaxInt)
	return graphs
}

// markViolations puts the codes of r's violations (and of the plan rule it broke) on
// the steps they name.
func (g *Graph) markViolations(r engine.PlanRejection) {
	mark := func(step, code string) {
		for i := range g.Nodes {
			if g.Nodes[i].StepID == step && !g.Nodes[i].External && !slices.Contains(g.Nodes[i].Violations, code) {
				g.Nodes[i].Violations = append(g.Nodes[i].Violations, code)
			}
		}
	}
	for _, v := range r.Violations {
		mark(v.StepID, v.Code)
	}
	if r.Code != "" {
		mark(r.StepID, string(r.Code))
	}
}

// markChecks puts on each step of the plan the codes of its refused tool_call checks,
// and on each step, of this plan or an earlier phase's, the labels its reported result
// got. A step id names one step of one accepted phase (no phase reuses an earlier
// phase's ids), so the check belongs to the node of that id.
func (g *Graph) markChecks(ops []engine.OperationRecord) {
	for _, o := range ops {
		if o.Operation != op.ToolCall || o.StepID == "" {
			continue
		}
		for i := range g.Nodes {
			n := &g.Nodes[i]
			if n.StepID != o.StepID {
				continue
			}
			switch {
			case o.Outcome == engine.CheckAllow && o.Finish != nil:
				for _, l := range o.Finish.Labels {
					if !slices.Contains(n.Labels, l) {
						n.Labels = append(n.Labels, l)
					}
				}
			case o.Outcome == engine.CheckGuardError && !n.External:
				n.Denials = append(n.Denials, string(engine.CheckGuardError))
			case o.Outcome == engine.CheckDeny && !n.External:
				n.Denials = append(n.Denials, o.Code)
			}
		}
	}
}

// layout builds the graph of plan given the steps of earlier phases: steps in columns by the length of the longest dependency chain
// leading to them (steps on a cycle, which only a rejected plan can have, in one
// column after the rest), each column in plan order.
func layout(plan *engine.RoutingPlan, prior []engine.RoutingStep) Graph {
	g := Graph{Nodes: []Node{}, Edges: []Edge{}, NodeWidth: NodeWidth, NodeHeight: NodeHeight}
	if plan == nil {
		return g
	}
	g.PlanID = plan.PlanID
	index := map[string]int{}
	node := func(s *engine.RoutingStep, external bool) {
		if _, seen := index[s.StepID]; seen {
			return
		}
		index[s.StepID] = len(g.Nodes)
		g.Nodes = append(g.Nodes, Node{StepID: s.StepID, Namespace: s.Namespace, Agent: s.AgentName, Capability: s.Capability(), External: external})
	}
	inPlan := map[string]bool{}
	for i := range plan.Steps {
		inPlan[plan.Steps[i].StepID] = true
	}
	priorByID := map[string]*engine.RoutingStep{}
	for i := range prior {
		priorByID[prior[i].StepID] = &prior[i]
	}
	edgeAt := map[[2]string]int{}
	edge := func(from, to string) *Edge {
		k := [2]string{from, to}
		if i, ok := edgeAt[k]; ok {
			return &g.Edges[i]
		}
		if !inPlan[from] {
			p := priorByID[from]
			if p == nil {
				return nil
			}
			node(p, true)
		}
		edgeAt[k] = len(g.Edges)
		g.Edges = append(g.Edges, Edge{From: from, To: to})
		return &g.Edges[len(g.Edges)-1]
	}
	known := func(id string) bool { return inPlan[id] || priorByID[id] != nil }
	for i := range plan.Steps {
		node(&plan.Steps[i], false)
	}
	for i := range plan.Steps {
		s := &plan.Steps[i]
		for _, d := range append(slices.Clone(s.DependsOn), s.ImplicitDeps...) {
			if e := edge(d, s.StepID); e != nil {
				e.DependsOn = true
			}
		}
		_ = ref.Walk(s.Parameters(), func(_ []byte, text string) error {
			refs, _ := ref.ScanFor(text, known) // a malformed token is the rejection's to tell
			for _, r := range refs {
				if e := edge(r.StepID, s.StepID); e != nil {
					e.Refs = append(e.Refs, strings.Join(r.Path, "."))
				}
			}
			return nil
		})
	}
	g.Edges = slices.DeleteFunc(g.Edges, func(e Edge) bool { return e.From == e.To })
	g.place(index)
	return g
}

// place assigns each node its column (longest path from a source, Kahn's order) and
// its row (order within the column), then the coordinates.
func (g *Graph) place(index map[string]int) {
	n := len(g.Nodes)
	col := make([]int, n)
	indeg := make([]int, n)
	out := make([][]int, n)
	for _, e := range g.Edges {
		from, to := index[e.From], index[e.To]
		out[from] = append(out[from], to)
		indeg[to]++
	}
	queue := []int{}
	for i := range n {
		if indeg[i] == 0 {
			queue = append(queue, i)
		}
	}
	done := make([]bool, n)
	maxCol := 0
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		done[i] = true
		maxCol = max(maxCol, col[i])
		for _, j := range out[i] {
			col[j] = max(col[j], col[i]+1)
			if indeg[j]--; indeg[j] == 0 {
				queue = append(queue, j)
			}
		}
	}
	if slices.Contains(done, false) {
		maxCol++
		for i := range n {
			if !done[i] {
				col[i] = maxCol
			}
		}
	}
	rows := map[int]int{}
	maxRows := 0
	for i := range g.Nodes {
		row := rows[col[i]]
		rows[col[i]] = row + 1
		maxRows = max(maxRows, row+1)
		g.Nodes[i].X = margin + col[i]*(NodeWidth+colGap)
		g.Nodes[i].Y = margin + row*(NodeHeight+rowGap)
	}
	if n == 0 {
		return
	}
	g.Width = 2*margin + (maxCol+1)*NodeWidth + maxCol*colGap
	bottom := margin + maxRows*NodeHeight + (maxRows-1)*rowGap
	lanes := 0
	for k := range g.Edges {
		e := &g.Edges[k]
		from, to := index[e.From], index[e.To]
		a, b := g.Nodes[from], g.Nodes[to]
		if col[to] == col[from]+1 {
			x1, y1, x2, y2 := a.X+NodeWidth, a.Y+NodeHeight/2, b.X, b.Y+NodeHeight/2
			mx := (x1 + x2) / 2
			e.Path = fmt.Sprintf("M %d %d C %d %d, %d %d, %d %d", x1, y1, mx, y1, mx, y2, x2, y2)
			e.LabelX, e.LabelY = mx, (y1+y2)/2-6
			continue
		}
		lanes++
		dip := bottom + lanes*laneGap
		x1, y1, x2, y2 := a.X+NodeWidth/2, a.Y+NodeHeight, b.X+NodeWidth/2, b.Y+NodeHeight
		e.Path = fmt.Sprintf("M %d %d C %d %d, %d %d, %d %d", x1, y1, x1, dip, x2, dip, x2, y2)
		e.LabelX, e.LabelY = (x1+x2)/2, dip-2
	}
	g.Height = bottom + lanes*laneGap + margin
}
