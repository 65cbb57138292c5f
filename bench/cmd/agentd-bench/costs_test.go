package main

import (
	"reflect"
	"testing"
)

func TestParseBench(t *testing.T) {
	out := `goos: linux
pkg: github.com/agentd-dev/agentd/engine
BenchmarkCheck_Labels/plain-2         	  100000	     20123 ns/op	    1234 B/op	      12 allocs/op
BenchmarkCheck_Labels/history20-2     	  100000	     23000 ns/op	    2345 B/op	      20 allocs/op
BenchmarkCheck_LabelsOther/plain-2    	  100000	         1 ns/op
BenchmarkCheck_Labels/plain-2         	  100000	     20500 ns/op
BenchmarkCheck_Binding-16             	   50000	     22000 ns/op	      21000 off-ns/check	     2500 binding-ns/check
BenchmarkHandler_StageCallStoreCost/clients=32-2 	 100 	 900 ns/op 	 1.21 bolt/memory
PASS
`
	for _, tc := range []struct {
		name string
		want benchMetrics
	}{
		{"Check_Labels", benchMetrics{
			"plain":     {"ns/op": {20123, 20500}, "B/op": {1234}, "allocs/op": {12}},
			"history20": {"ns/op": {23000}, "B/op": {2345}, "allocs/op": {20}},
		}},
		{"Check_Binding", benchMetrics{"": {"ns/op": {22000}, "off-ns/check": {21000}, "binding-ns/check": {2500}}}},
		{"Handler_StageCallStoreCost", benchMetrics{"clients=32": {"ns/op": {900}, "bolt/memory": {1.21}}}},
		{"Check_Approval", benchMetrics{}}, // not in this tree: no figures, not an error
	} {
		if got := parseBench(out, tc.name); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseBench(%s) = %v\nwant %v", tc.name, got, tc.want)
		}
	}
}
