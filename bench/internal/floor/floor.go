// Package floor is the HTTP floor of the benchmark: the least a Go server must do to
// answer a plan review at all. It receives the after_planning body, decodes it the way
// agentd's server does (bounded read, UTF-8 check, strict decoding into the API's
// wire type, api.AfterPlanningRequest, on its jsonread fast path, else with
// encoding/json; one value only) and
// writes a fixed allowed answer.
package floor

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/agentd-dev/agentd/api"
	"github.com/agentd-dev/agentd/engine/jsonread"
)

// maxBody bounds a request body as agentd's default does.
const maxBody = 1 << 20

// answer is the fixed allowed answer; it holds what the load generator checks.
var answer = []byte(`{"decision_id":"floor","request_id":"floor","generation":"floor","plan":{"plan_id":"floor","steps":[]},"invocations":[]}` + "\n")

// Handler serves POST /v1/hooks/after_planning and GET /readyz.
func Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("POST /v1/hooks/after_planning", func(w http.ResponseWriter, r *http.Request) {
		if err := decode(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	})
	return mux
}

// decode reads and decodes one after_planning body.
func decode(body io.Reader) error {
	lr := &io.LimitedReader{R: body, N: maxBody + 1}
	data, err := io.ReadAll(lr)
	switch {
	case err != nil:
		return err
	case lr.N <= 0:
		return errTooLarge
	case !utf8.Valid(data):
		return errNotUTF8
	}
	var req api.AfterPlanningRequest
	if !req.ReadJSON(data) {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			return err
		}
		if jsonread.Trailing(data, dec.InputOffset()) >= 0 {
			return errTrailing
		}
	}
	if req.Plan == nil {
		return errNoPlan
	}
	return nil
}

type floorError string

func (e floorError) Error() string { return string(e) }

const (
	errTooLarge floorError = "request body too large"
	errNotUTF8  floorError = "request body is not valid UTF-8"
	errTrailing floorError = "request body goes on after its JSON value"
	errNoPlan   floorError = "plan is required"
)

// Serve serves Handler on addr until the process ends.
func Serve(addr string) error {
	srv := &http.Server{Addr: addr, Handler: Handler(), ReadHeaderTimeout: 10 * time.Second}
	return srv.ListenAndServe()
}
