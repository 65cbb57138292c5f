package openai

import (
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentd-dev/agentd/engine"
)

// OpenTelemetry GenAI attribute keys of the upstream call's span.
const (
	attrProvider      = "gen_ai.provider.name"
	attrRequestModel  = "gen_ai.request.model"
	attrResponseModel = "gen_ai.response.model"
	attrInputTokens   = "gen_ai.usage.input_tokens"
	attrOutputTokens  = "gen_ai.usage.output_tokens"
)

// tracerOf returns the gateway's tracer, nil for none or a no-op provider: an untraced
// gateway builds no span.
func tracerOf(tp trace.TracerProvider) trace.Tracer {
	return engine.Tracer(tp, "github.com/agentd-dev/agentd/gateway/openai")
}

// startChat opens the chat span of the call's upstream call (nil when tracing is off),
// a client span in the request's trace (engine.RequestContext).
func (c *chatCall) startChat(ctx context.Context) trace.Span {
	if c.g.tracer == nil {
		return nil
	}
	_, span := c.g.tracer.Start(engine.RequestContext(ctx, c.id), "chat "+c.req.model, trace.WithSpanKind(trace.SpanKindClient))
	if span.IsRecording() {
		span.SetAttributes(attribute.String(engine.AttrGenAIOperation, "chat"), attribute.String(attrProvider, "openai"),
			attribute.String(attrRequestModel, c.req.model), attribute.String(engine.AttrGenAIConversationID, c.id))
	}
	return span
}

// upstreamUsage is what the chat span reads of a reply: its model and token counts.
type upstreamUsage struct {
	Model string `json:"model"`
	Usage *struct {
		PromptTokens     *int64 `json:"prompt_tokens"`
		CompletionTokens *int64 `json:"completion_tokens"`
	} `json:"usage"`
}

// endChat ends span (nil: tracing is off) with the response's model and the usage the
// upstream reported (u nil: none), or the error the call failed with as error.type.
func endChat(span trace.Span, u *upstreamUsage, e *apiError) {
	if span == nil {
		return
	}
	if span.IsRecording() {
		if u != nil && u.Model != "" {
			span.SetAttributes(attribute.String(attrResponseModel, u.Model))
		}
		if u != nil && u.Usage != nil {
			if n := u.Usage.PromptTokens; n != nil {
				span.SetAttributes(attribute.Int64(attrInputTokens, *n))
			}
			if n := u.Usage.CompletionTokens; n != nil {
				span.SetAttributes(attribute.Int64(attrOutputTokens, *n))
			}
		}
		if e != nil {
			span.SetAttributes(attribute.String(engine.AttrErrorType, e.Code))
			span.SetStatus(codes.Error, e.Message)
		}
	}
	span.End()
}

// usageOf reads the model and usage of a completion for span, only when it records.
func usageOf(span trace.Span, model string, usage json.RawMessage, completion []byte) *upstreamUsage {
	if span == nil || !span.IsRecording() {
		return nil
	}
	u := &upstreamUsage{Model: model}
	if completion != nil {
		_ = json.Unmarshal(completion, u) // a reply parseCompletion took
	} else if len(usage) > 0 {
		_ = json.Unmarshal(usage, &u.Usage)
	}
	return u
}
