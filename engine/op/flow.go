package op

// Flow is what a tool_call may know of where its request's data came from
// (docs/semantics.md §8.21): the labels of the results the request had reported and
// the steps it had executed, as the engine judges them for this call. The engine
// sets it on a call (Call.Flow) before the guards run; it is shared between the
// copies of a call and must be treated as read-only.
type Flow struct {
	// Labels is the request's label set as the call sees it, sorted, no duplicates.
	Labels []string `json:"labels"`
	// History is the executed steps the call sees, in the order their finishes were
	// reported.
	History []HistoryStep `json:"history"`
}

// HistoryStep is one executed step of a request: the step, how it ended and the
// labels its reported result got.
type HistoryStep struct {
	StepID     string   `json:"step_id"`
	Namespace  string   `json:"namespace,omitempty"`
	AgentName  string   `json:"agent_name"`
	Capability string   `json:"capability"`
	Status     string   `json:"status"`
	Labels     []string `json:"labels"`
}
