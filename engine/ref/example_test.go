package ref_test

import (
	"fmt"

	"github.com/agentd-dev/agentd/engine/ref"
)

func ExampleScan() {
	refs, err := ref.Scan("Buy if {{step-1.response.data.price}} < 200 ({{user.limit}} ignored)")
	fmt.Println(err)
	for _, r := range refs {
		fmt.Println(r.StepID, r.Path, r.Offset)
	}

	_, err = ref.Scan("{{step-1}}")
	fmt.Println(err)
	// Output:
	// <nil>
	// step-1 [response data price] 7
	// malformed step reference "{{step-1}}" at offset 0: missing path after step id
}

func ExampleWalk() {
	params := map[string]any{
		"symbol": "AAPL",
		"legs":   []any{map[string]any{"price": "{{step-1.response.data.price}}"}},
	}
	_ = ref.Walk(params, func(path []byte, s string) error {
		fmt.Printf("%s = %q\n", path, s)
		return nil
	})
	// Output:
	// /legs/0/price = "{{step-1.response.data.price}}"
	// /symbol = "AAPL"
}
