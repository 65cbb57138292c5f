package policy

import (
	"testing"
)

func TestLint_StockLibraryIsClean(t *testing.T) {
	b := libraryBundle(t, Options{})
	if ws := b.Lint([]string{"data.agentd.plan"}); len(ws) != 1 || ws[0].Kind != WarnUnprovidedData {
		t.Errorf("Lint(stock plan) = %v, want only the optional data.agentd.limits", ws)
	}
	if ws := Strict(libraryModules(t, false)); len(ws) != 0 {
		t.Errorf("Strict(library) = %v", ws)
	}
}

// TestLint_KindsAndPositions: each mistake is reported with its kind at its line.
func TestLint_KindsAndPositions(t *testing.T) {
	tests := map[string]struct {
		src   string
		query string
		want  Warning
	}{
		WarnUnprovidedData: {`package p

deny contains "no" if {
	some step in input.plan.steps
	not step.agent_name in data.allowlist
}
`, "data.p", Warning{Kind: WarnUnprovidedData, File: "p.rego", Line: 5}},
		WarnNoDeny: {`package p

allow if input.plan
`, "data.p", Warning{Kind: WarnNoDeny}},
		WarnUndefinedRead: {`package p

deny contains "no trades" if {
	some step in input.plan.steps
	step.metadata.capability == "execute_trade"
}
`, "data.p", Warning{Kind: WarnUndefinedRead, File: "p.rego", Line: 3}},
	}
	for kind, tc := range tests {
		t.Run(kind, func(t *testing.T) {
			ws := mustCompile(t, Options{}, "p.rego", tc.src).Lint([]string{tc.query})
			if len(ws) != 1 || ws[0].Kind != tc.want.Kind || ws[0].File != tc.want.File || ws[0].Line != tc.want.Line {
				t.Fatalf("Lint = %v, want one %s at %s:%d", ws, tc.want.Kind, tc.want.File, tc.want.Line)
			}
		})
	}
}

// TestLint_NegatedAndGuardedReadsAreFine: a negated read, and a direct read of a
// member another deny rule denies the absence of, are no warnings.
func TestLint_NegatedAndGuardedReadsAreFine(t *testing.T) {
	b := mustCompile(t, Options{}, "p.rego", `package p

deny contains "unapproved" if {
	some step in input.plan.steps
	not step.metadata.approved
}

deny contains "no capability" if {
	some step in input.plan.steps
	not capability(step)
}

deny contains "no trades" if {
	some step in input.plan.steps
	step.metadata.capability == "execute_trade"
}

capability(step) := c if {
	c := step.metadata.capability
	is_string(c)
}
`)
	if ws := b.Lint([]string{"data.p"}); len(ws) != 0 {
		t.Errorf("Lint = %v, want none", ws)
	}
}

func TestStrict_ReportsWhatStrictModeRejects(t *testing.T) {
	ws := Strict([]Module{{File: "p.rego", Source: []byte("package p\n\nimport data.unused\n\ndeny contains \"x\" if {\n\tx := 1\n\tinput.plan\n}\n")}})
	if len(ws) != 2 || ws[0].Kind != WarnStrict || ws[0].Line != 3 || ws[1].Line != 6 {
		t.Errorf("Strict = %v, want the unused import (line 3) and the unused variable (line 6)", ws)
	}
}
