package engine

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"time"
)

// A decision id names one stage call or operation check: it is returned to the caller,
// stamped on what the call recorded (its invocations, its operation check, its plan
// rejection) and on its decision event, so the three can be joined. It is 32 hex
// digits: 6 bytes of Unix milliseconds, then 10 random bytes, so ids sort by time.

type decisionIDKey struct{}

// WithDecisionID returns ctx carrying the decision id of the call it starts; an entry
// point sets it when it answers with the id before the call returns (the HTTP API puts
// it in every answer, errors included). Without one the driver makes one.
func WithDecisionID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, decisionIDKey{}, id)
}

// DecisionIDFrom returns the decision id ctx carries, if any.
func DecisionIDFrom(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(decisionIDKey{}).(string)
	return id, ok && id != ""
}

// NewDecisionID returns a fresh decision id.
func NewDecisionID() string {
	var b [16]byte
	ms := uint64(time.Now().UnixMilli())
	binary.BigEndian.PutUint16(b[0:2], uint16(ms>>32))
	binary.BigEndian.PutUint32(b[2:6], uint32(ms))
	_, _ = rand.Read(b[6:])
	return hex.EncodeToString(b[:])
}

// decisionID is the id of the call ctx starts: the one the entry point set, or a new one.
func decisionID(ctx context.Context) string {
	if id, ok := DecisionIDFrom(ctx); ok {
		return id
	}
	return NewDecisionID()
}
