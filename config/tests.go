package config

import (
	"encoding/json"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/agentd-dev/agentd/builtin"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/diag"
	"github.com/agentd-dev/agentd/schemas"
)

// TestCase is one pipeline test case of tests/*.yaml (see schemas/hooktests.schema.json).
type TestCase struct {
	File   string     `json:"-"`
	Line   int        `json:"-"`
	Name   string     `json:"name"`
	Stage  string     `json:"stage"`
	Given  TestGiven  `json:"given"`
	Expect TestExpect `json:"expect"`
}

// TestGiven is the input of a test case. Cases with the same RequestID continue one
// request, in file order; a case without one runs on a request of its own.
type TestGiven struct {
	RequestID         string                  `json:"request_id"`
	Request           string                  `json:"request"`
	Metadata          map[string]any          `json:"metadata"`
	Enrichments       map[string]any          `json:"enrichments"`
	CacheVary         map[string]string       `json:"cache_vary"`
	CacheReadDisabled bool                    `json:"cache_read_disabled"`
	Plan              *engine.RoutingPlan     `json:"plan"`
	Phase             int                     `json:"phase"`
	PriorSteps        []engine.RoutingStep    `json:"prior_steps"`
	Result            *engine.ExecutionResult `json:"result"`
	Response          string                  `json:"response"`
	Operation         string                  `json:"operation"`
	Call              map[string]any          `json:"call"`
	// History and Labels are what the request reported before the case: executed
	// steps and their labels, and labels beside them (docs/semantics.md §8.21).
	History []engine.HistoryStep `json:"history"`
	Labels  []string             `json:"labels"`
}

// TestExpect lists what a test case checks; absent fields are not checked.
type TestExpect struct {
	Enrichments map[string]any `json:"enrichments"`
	// ShortCircuit is absent (not checked), JSON null (none expected) or an object.
	ShortCircuit json.RawMessage    `json:"short_circuit"`
	Plan         string             `json:"plan"`
	Violations   []string           `json:"violations"`
	PlanSteps    []string           `json:"plan_steps"`
	Response     *string            `json:"response"`
	Allowed      *bool              `json:"allowed"`
	Denial       *ExpectedDenial    `json:"denial"`
	Invocations  []ExpectedHookCall `json:"invocations"`
}

// ExpectedDenial is an expected guard denial; empty fields are not checked.
type ExpectedDenial struct {
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// ExpectedHookCall is an expected invocation record; empty fields are not checked.
type ExpectedHookCall struct {
	Hook   string `json:"hook"`
	Status string `json:"status"`
	Reason string `json:"reason"`
}

// LoadTests reads and validates the test cases of dir/tests/*.yaml, in file order.
func LoadTests(dir string) ([]TestCase, error) {
	files, errs := readTree(dir, testsDir, false, hasExt(".yaml", ".yml"))
	var cases []TestCase
	for _, f := range files {
		src := builtin.NewSource(f.name, f.data)
		root, perrs, _ := parseDocument(src, schemas.HookTests())
		errs = append(errs, perrs...)
		if root == nil || len(perrs) > 0 {
			continue
		}
		for i, n := range get(root, "tests").Content {
			c, err := decodeCase(src, n, i)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			cases = append(cases, c)
		}
	}
	if len(errs) > 0 {
		return nil, errs.Normalize(50)
	}
	return cases, nil
}

// decodeCase decodes through JSON so the engine types' JSON field names apply.
func decodeCase(src *builtin.Source, n *yaml.Node, i int) (TestCase, *diag.Error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return TestCase{}, src.Errorf(diag.KindSchema, n, "tests["+strconv.Itoa(i)+"]", "%v", err)
	}
	data, err := json.Marshal(v)
	if err == nil {
		var c TestCase
		if err = json.Unmarshal(data, &c); err == nil {
			c.File, c.Line = src.Name, n.Line
			return c, nil
		}
	}
	return TestCase{}, src.Errorf(diag.KindSchema, n, "tests["+strconv.Itoa(i)+"]", "%v", err)
}
