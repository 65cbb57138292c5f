package reload

import "github.com/agentd-dev/agentd/config"

// SetLoad replaces what r compiles a directory with (config.Load).
func SetLoad(r *Reloader, load func(string, config.Options) (*config.Generation, error)) {
	r.load = load
}
