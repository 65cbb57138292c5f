package schemas_test

import (
	"fmt"

	"github.com/agentd-dev/agentd/schemas"
	"gopkg.in/yaml.v3"
)

func ExampleValidate() {
	src := `
apiVersion: agentd.dev/v1
kind: HookSet
metadata: {name: demo}
hooks:
  - name: tenant-context
    stgae: before_planning
    steps:
      - enrich: {key: rag_context, value: "metadata.tenant"}
`
	var doc any
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		panic(err)
	}
	for _, v := range schemas.Validate(schemas.HookSet(), doc) {
		fmt.Printf("%s: %s: %s\n", v.Pointer, v.Keyword, v.Message)
	}
	// Output:
	// /hooks/0: required: missing property "stage"
	// /hooks/0/stgae: additionalProperties: additional property "stgae" is not allowed
}
