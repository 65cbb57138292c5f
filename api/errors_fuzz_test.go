package api_test

import (
	"testing"

	"github.com/agentd-dev/agentd/api"
)

// FuzzErrorBody: an error answer's body (what api/client reads from any server) either
// fails to decode or decodes into an Error whose own encoding decodes back to the
// same type, message and details.
func FuzzErrorBody(f *testing.F) {
	for _, seed := range []string{
		`{"error":{"type":"tenant_forbidden","message":"request \"r\" does not belong to the caller's tenant"}}`,
		`{"error":{"type":"generation_retired","message":"m","generation":"g1"}}`,
		`{"error":{"type":"invalid_field","message":"m","field":"plan.steps","offset":12}}`,
		`{"error":null}`, `{"status":"ok"}`, `[]`, `{"error":{"type":1}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var e api.Error
		if e.UnmarshalJSON(body) != nil {
			return
		}
		data, err := e.MarshalJSON()
		if err != nil {
			t.Fatalf("a decoded error does not encode: %v", err)
		}
		var again api.Error
		if err := again.UnmarshalJSON(data); err != nil || again.Type != e.Type || again.Message != e.Message || len(again.Details) != len(e.Details) {
			t.Fatalf("%s decoded to %+v, re-encoded as %s, decoded to %+v (%v)", body, e, data, again, err)
		}
	})
}
