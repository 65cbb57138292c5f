package engine

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func TestCatalog_NewCatalogRejectsInvalidInput(t *testing.T) {
	quote := Capability{Name: "stock_quote", Returns: []string{"price"}}
	tests := []struct {
		name   string
		agents []CatalogAgent
		index  int
		reason CatalogReason
		field  string
	}{
		{"empty namespace", []CatalogAgent{{Agent: "a"}}, 0, CatalogEmptyNamespace, ""},
		{"empty agent", []CatalogAgent{{Namespace: "ns", Agent: "a"}, {Namespace: "ns"}}, 1, CatalogEmptyAgent, ""},
		{"duplicate agent", []CatalogAgent{{Namespace: "ns", Agent: "a"}, {Namespace: "other", Agent: "a"}, {Namespace: "ns", Agent: "a"}},
			2, CatalogDuplicateAgent, "ns/a"},
		{"empty capability", []CatalogAgent{{Namespace: "ns", Agent: "a", Capabilities: []Capability{quote, {}}}}, 0, CatalogEmptyCapability, ""},
		{"duplicate capability", []CatalogAgent{{Namespace: "ns", Agent: "a", Capabilities: []Capability{quote, {Name: "x"}, quote}}},
			0, CatalogDuplicateCapability, "stock_quote"},
		{"empty return field", []CatalogAgent{{Namespace: "ns", Agent: "a", Capabilities: []Capability{{Name: "q", Returns: []string{"p", ""}}}}},
			0, CatalogEmptyReturnField, "q"},
		{"duplicate return field", []CatalogAgent{{Namespace: "ns", Agent: "a", Capabilities: []Capability{{Name: "q", Returns: []string{"p", "c", "p"}}}}},
			0, CatalogDuplicateReturnField, "p"},
		{"first problem in input order", []CatalogAgent{{Namespace: "ns", Agent: "a", Capabilities: []Capability{{}}}, {Agent: "b"}},
			0, CatalogEmptyCapability, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewCatalog(tt.agents)
			var ce *CatalogError
			if !errors.As(err, &ce) {
				t.Fatalf("NewCatalog() = %v, %v; want *CatalogError", c, err)
			}
			if c != nil {
				t.Fatal("NewCatalog returned a catalog with an error")
			}
			if ce.Index != tt.index || ce.Reason != tt.reason || ce.Name != tt.field {
				t.Fatalf("CatalogError = %+v, want index %d reason %s name %q", ce, tt.index, tt.reason, tt.field)
			}
		})
	}
}

func TestCatalog_ErrorText(t *testing.T) {
	_, err := NewCatalog([]CatalogAgent{{Namespace: "ns", Agent: "a", Capabilities: []Capability{{Name: "q"}, {Name: "q"}}}})
	if want := `invalid catalog: agent 0: duplicate_capability "q"`; err == nil || err.Error() != want {
		t.Fatalf("Error() = %v, want %s", err, want)
	}
	_, err = NewCatalog([]CatalogAgent{{Agent: "a"}})
	if want := `invalid catalog: agent 0: empty_namespace`; err == nil || err.Error() != want {
		t.Fatalf("Error() = %v, want %s", err, want)
	}
}

func TestCatalog_Lookups(t *testing.T) {
	c := vpCatalog(t)
	if !c.Agent("demo-tools", "stock-service") || !c.Agent("other-tools", "stock-service") {
		t.Fatal("known agents not found")
	}
	if c.Agent("demo-tools", "missing") || c.Agent("missing", "stock-service") || c.Agent("", "") {
		t.Fatal("unknown agent found")
	}
	cp, ok := c.capability("demo-tools", "stock-service", "stock_quote")
	if !ok || !reflect.DeepEqual(*cp, Capability{Name: "stock_quote", Returns: []string{"price", "currency"}}) {
		t.Fatalf("capability(stock_quote) = %+v, %v", cp, ok)
	}
	if cp, ok := c.capability("demo-tools", "stock-service", "execute_trade"); !ok || cp.Returns != nil {
		t.Fatalf("capability(execute_trade) = %+v, %v", cp, ok)
	}
	for _, q := range [][3]string{
		{"demo-tools", "stock-service", "stock_history"},
		{"other-tools", "stock-service", "stock_quote"},
		{"demo-tools", "missing", "stock_quote"},
		{"demo-tools", "stock-service", ""},
	} {
		if _, ok := c.capability(q[0], q[1], q[2]); ok {
			t.Errorf("capability(%q) found", q)
		}
	}
}

func TestCatalog_CopiesInput(t *testing.T) {
	in := []CatalogAgent{
		{Namespace: "b", Agent: "z"},
		{Namespace: "ns", Agent: "a", Capabilities: []Capability{{Name: "q", Returns: []string{"p"}}, {Name: "r"}}},
	}
	c, err := NewCatalog(in)
	if err != nil {
		t.Fatal(err)
	}
	in[1].Agent = "changed"
	in[1].Capabilities[0].Name = "changed"
	in[1].Capabilities[0].Returns[0] = "changed"
	if !c.Agent("ns", "a") || !c.Agent("b", "z") {
		t.Fatal("changing the input changed the catalog")
	}
	if cp, _ := c.capability("ns", "a", "q"); cp == nil || cp.Returns[0] != "p" {
		t.Fatalf("changing the input changed returns: %v", cp)
	}
	if _, ok := c.capability("ns", "a", "r"); !ok {
		t.Fatal("second capability not indexed")
	}
	if _, ok := c.capability("b", "z", "q"); ok {
		t.Fatal("capability found on an agent without capabilities")
	}
}

func TestCatalog_NilAndEmpty(t *testing.T) {
	var nilCatalog *Catalog
	if nilCatalog.Agent("ns", "a") {
		t.Fatal("nil catalog reports agents")
	}
	if _, ok := nilCatalog.capability("ns", "a", "q"); ok {
		t.Fatal("nil catalog reports a capability")
	}
	empty, err := NewCatalog(nil)
	if err != nil || empty == nil {
		t.Fatalf("NewCatalog(nil) = %v, %v", empty, err)
	}
	if empty.Agent("ns", "a") || len(empty.agents) != 0 {
		t.Fatal("empty catalog reports agents")
	}
}

func TestCatalog_JSONFieldNames(t *testing.T) {
	const doc = `[{"namespace":"demo-tools","agent":"stock-service","capabilities":[` +
		`{"name":"stock_quote","returns":["price","currency"]},{"name":"execute_trade"}]}]`
	var agents []CatalogAgent
	if err := json.Unmarshal([]byte(doc), &agents); err != nil {
		t.Fatal(err)
	}
	c, err := NewCatalog(agents)
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(c.agents)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != doc {
		t.Fatalf("round trip =\n %s\nwant\n %s", out, doc)
	}
}
