package bundle

import (
	"encoding/json"
	"time"
)

// Status is a bundle's state in OPA's status format (the bundles member of an OPA
// status report; OPA's plugins/bundle.Status decodes it): the active revision, when
// the source was last asked, answered, downloaded and activated, and the last
// failure's code (a Kind) and message, empty after a success. OPA's errors list is
// left out: OPA types it as Go errors, which a status reader cannot decode.
type Status struct {
	Name                     string    `json:"name"`
	ActiveRevision           string    `json:"active_revision,omitempty"`
	LastSuccessfulActivation time.Time `json:"last_successful_activation"`
	// Type is "snapshot": agentd bundles are whole configs, never deltas.
	Type                   string      `json:"type,omitempty"`
	Size                   int         `json:"size,omitempty"`
	LastSuccessfulDownload time.Time   `json:"last_successful_download"`
	LastSuccessfulRequest  time.Time   `json:"last_successful_request"`
	LastRequest            time.Time   `json:"last_request"`
	Code                   string      `json:"code,omitempty"`
	Message                string      `json:"message,omitempty"`
	HTTPCode               json.Number `json:"http_code,omitempty"`
}
