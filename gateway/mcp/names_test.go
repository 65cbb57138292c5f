package mcp

import (
	"maps"
	"slices"
	"testing"
)

func TestListedNames(t *testing.T) {
	for _, c := range []struct {
		name    string
		offers  []offer
		listed  map[string]offer
		dropped []offer
	}{
		{
			name:   "distinct names are listed as they are",
			offers: []offer{{"a", "echo"}, {"b", "add"}},
			listed: map[string]offer{"echo": {"a", "echo"}, "add": {"b", "add"}},
		},
		{
			name:   "a name several upstreams offer is qualified for each",
			offers: []offer{{"a", "echo"}, {"b", "echo"}, {"b", "add"}},
			listed: map[string]offer{"a__echo": {"a", "echo"}, "b__echo": {"b", "echo"}, "add": {"b", "add"}},
		},
		{
			name:    "a qualified name equal to an upstream's own name goes to the first offer",
			offers:  []offer{{"c", "a__echo"}, {"a", "echo"}, {"b", "echo"}},
			listed:  map[string]offer{"a__echo": {"c", "a__echo"}, "b__echo": {"b", "echo"}},
			dropped: []offer{{"a", "echo"}},
		},
		{
			name:    "one upstream listing a name twice keeps the first",
			offers:  []offer{{"a", "echo"}, {"a", "echo"}},
			listed:  map[string]offer{"a__echo": {"a", "echo"}},
			dropped: []offer{{"a", "echo"}},
		},
		{
			name:   "names differing in letter case are different names",
			offers: []offer{{"a", "echo"}, {"b", "Echo"}},
			listed: map[string]offer{"echo": {"a", "echo"}, "Echo": {"b", "Echo"}},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			listed, dropped := listedNames(c.offers)
			if !maps.Equal(listed, c.listed) || !slices.Equal(dropped, c.dropped) {
				t.Errorf("listedNames = %v, dropped %v; want %v, dropped %v", listed, dropped, c.listed, c.dropped)
			}
		})
	}
}
