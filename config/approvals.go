package config

import (
	"net/url"
	"os"

	"github.com/agentd-dev/agentd/engine/diag"
)

// ApprovalNotify is the compiled approvals.notify section: the webhook that announces
// new pending approvals (docs/semantics.md §8.20) and the secret it signs them with.
type ApprovalNotify struct {
	URL string `json:"url"`
	// SecretEnv names the environment variable holding the signing secret; Secret is
	// its value when the generation loaded, never shown.
	SecretEnv string `json:"secret_env"`
	Secret    string `json:"-"`
}

// compileApprovals compiles the one approvals section of the directory, nil when
// there is none or it has no notify. The URL must be absolute http(s) and the secret's
// variable set and non-empty, each reported at its line and column.
func (l *loader) compileApprovals() *ApprovalNotify {
	var out *ApprovalNotify
	var from document
	for _, d := range l.docs {
		n, key := child(d.root, "approvals")
		if n == nil || !d.usable("approvals") {
			continue
		}
		if from.src != nil {
			l.errs = append(l.errs, d.src.Errorf(diag.KindInvalidValue, key, "approvals", "approvals is already configured in %s", from.src.Name))
			continue
		}
		from = d
		notify := get(n, "notify")
		if notify == nil {
			continue
		}
		u, env := get(notify, "url"), get(notify, "secret_env")
		if p, err := url.Parse(u.Value); err != nil || p.Host == "" || p.Scheme != "http" && p.Scheme != "https" {
			l.errs = append(l.errs, d.src.Errorf(diag.KindInvalidValue, u, "approvals.notify.url", "the webhook URL must be an absolute http or https URL, got %q", u.Value))
			continue
		}
		secret := os.Getenv(env.Value)
		if secret == "" {
			l.errs = append(l.errs, d.src.Errorf(diag.KindInvalidValue, env, "approvals.notify.secret_env", "the environment variable %s that holds the webhook's signing secret is not set", env.Value))
			continue
		}
		out = &ApprovalNotify{URL: u.Value, SecretEnv: env.Value, Secret: secret}
	}
	return out
}
