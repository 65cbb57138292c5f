package engine

import "context"

// RequestInfo identifies the request a stage call belongs to: its id, the config
// generation it runs on, and its cache gate. Runtimes (Lifecycle, the daemon) attach it
// to the context of every stage call, so hooks of any stage can key state by request
// and generation.
type RequestInfo struct {
	ID         string
	Generation string
	Gate       Gate
	// Phase is the number of the request's last accepted plan phase, 0 before any;
	// Failed is set once the request failed.
	Phase  int
	Failed bool
	// Flow is the labels and history the request had reported (never nil from a
	// driver): what a plan review sees.
	Flow *Flow
}

type requestInfoKey struct{}

// WithRequestInfo returns ctx carrying info.
func WithRequestInfo(ctx context.Context, info RequestInfo) context.Context {
	return context.WithValue(ctx, requestInfoKey{}, info)
}

// RequestInfoFrom returns the RequestInfo attached to ctx, if any.
func RequestInfoFrom(ctx context.Context) (RequestInfo, bool) {
	info, ok := ctx.Value(requestInfoKey{}).(RequestInfo)
	return info, ok
}
