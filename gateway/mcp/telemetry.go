package mcp

import (
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentd-dev/agentd/engine"
)

// The gateway's spans follow the OpenTelemetry semantic conventions for MCP
// (open-telemetry/semantic-conventions, docs/gen-ai/mcp.md, status Development, as of
// commit 04f1672): a SERVER span for each request or notification a client sends the
// gateway and a CLIENT span for each one the gateway sends an upstream, named
// "{mcp.method.name} {target}" (target: the tool or prompt name) or
// "{mcp.method.name}", with W3C trace context carried in params._meta both ways.

// Attribute keys of the MCP conventions.
const (
	attrMCPMethod        = "mcp.method.name"
	attrMCPSessionID     = "mcp.session.id"
	attrMCPProtocol      = "mcp.protocol.version"
	attrMCPResourceURI   = "mcp.resource.uri"
	attrJSONRPCRequestID = "jsonrpc.request.id"
	attrRPCStatusCode    = "rpc.response.status_code"
	attrPromptName       = "gen_ai.prompt.name"
	attrNetTransport     = "network.transport"
	attrNetProtocol      = "network.protocol.name"
	attrServerAddress    = "server.address"
	attrServerPort       = "server.port"
)

// errorToolError is the error.type of a tools/call answered with isError true.
const errorToolError = "tool_error"

// traceContext is the propagator of params._meta: W3C traceparent and tracestate.
var traceContext = propagation.TraceContext{}

// metaCarrier reads and writes W3C trace context in an MCP params._meta map.
type metaCarrier map[string]any

func (m metaCarrier) Get(key string) string {
	v, _ := m[key].(string)
	return v
}

func (m metaCarrier) Set(key, value string) { m[key] = value }

func (m metaCarrier) Keys() []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// metaTraceContext is the W3C trace context a message's params._meta carries
// (traceparent and tracestate, read by the standard propagator); invalid when it
// carries none, or a malformed one, or values that are not strings.
func metaTraceContext(meta map[string]any) trace.SpanContext {
	if len(meta) == 0 {
		return trace.SpanContext{}
	}
	return trace.SpanContextFromContext(traceContext.Extract(context.Background(), metaCarrier(meta)))
}

// paramsOf returns the params of req, nil when it has none (a nil pointer included).
func paramsOf(req mcp.Request) mcp.Params {
	p := req.GetParams()
	if p == nil {
		return nil
	}
	if v := reflect.ValueOf(p); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	return p
}

// describe returns the span name and the attributes the conventions derive from a
// message's method and params: the target (a tool's or a prompt's name), the GenAI
// tool attributes of tools/call, the resource URI of the resource methods.
func describe(method string, p mcp.Params) (string, []attribute.KeyValue) {
	attrs := []attribute.KeyValue{attribute.String(attrMCPMethod, method)}
	name := method
	switch p := p.(type) {
	case *mcp.CallToolParams:
		name += " " + p.Name
		attrs = append(attrs, attribute.String(engine.AttrGenAIToolName, p.Name), attribute.String(engine.AttrGenAIOperation, "execute_tool"))
	case *mcp.CallToolParamsRaw:
		name += " " + p.Name
		attrs = append(attrs, attribute.String(engine.AttrGenAIToolName, p.Name), attribute.String(engine.AttrGenAIOperation, "execute_tool"))
	case *mcp.GetPromptParams:
		name += " " + p.Name
		attrs = append(attrs, attribute.String(attrPromptName, p.Name))
	case *mcp.ReadResourceParams:
		attrs = append(attrs, attribute.String(attrMCPResourceURI, p.URI))
	case *mcp.SubscribeParams:
		attrs = append(attrs, attribute.String(attrMCPResourceURI, p.URI))
	case *mcp.UnsubscribeParams:
		attrs = append(attrs, attribute.String(attrMCPResourceURI, p.URI))
	}
	return name, attrs
}

// endSpan ends an MCP span with the outcome of its message: a JSON-RPC error's code as
// error.type and rpc.response.status_code and its message as the status; a tool
// result with isError true as tool_error; a timeout or cancellation by name; any
// other failure as _OTHER.
func endSpan(span trace.Span, res mcp.Result, err error) {
	if span.IsRecording() {
		var wire *jsonrpc.Error
		switch {
		case errors.As(err, &wire):
			code := strconv.FormatInt(wire.Code, 10)
			span.SetAttributes(attribute.String(engine.AttrErrorType, code), attribute.String(attrRPCStatusCode, code))
			span.SetStatus(codes.Error, wire.Message)
		case errors.Is(err, context.DeadlineExceeded):
			span.SetAttributes(attribute.String(engine.AttrErrorType, "timeout"))
			span.SetStatus(codes.Error, err.Error())
		case errors.Is(err, context.Canceled):
			span.SetAttributes(attribute.String(engine.AttrErrorType, "cancelled"))
			span.SetStatus(codes.Error, err.Error())
		case err != nil:
			span.SetAttributes(attribute.String(engine.AttrErrorType, "_OTHER"))
			span.SetStatus(codes.Error, err.Error())
		default:
			if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError {
				span.SetAttributes(attribute.String(engine.AttrErrorType, errorToolError))
				span.SetStatus(codes.Error, errorToolError)
			}
			if r, ok := res.(*mcp.InitializeResult); ok && r != nil && r.ProtocolVersion != "" {
				span.SetAttributes(attribute.String(attrMCPProtocol, r.ProtocolVersion))
			}
		}
	}
	span.End()
}

// traceServer is the server's outermost receiving middleware when the gateway traces:
// each request or notification of a client is a SERVER span. Its parent is the trace
// context the client put in params._meta; without one, the span of the session's
// agentd request (engine.RequestSpanContext), so that a session's calls share its
// trace, or else the ambient context. When _meta is the parent, the ambient context is
// a link; the HTTP request's own traceparent (the transport's context) always is. The
// attributes: mcp.method.name, the target's, mcp.session.id, mcp.protocol.version,
// network.transport (tcp over HTTP, pipe over stdio) and network.protocol.name http.
// jsonrpc.request.id is not set: the MCP Go SDK gives a middleware no access to the
// message's id (modelcontextprotocol/go-sdk#1264).
func (g *Gateway) traceServer(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		p := paramsOf(req)
		name, attrs := describe(method, p)
		opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}
		ss, _ := req.GetSession().(*mcp.ServerSession)
		parent := ctx
		ambient := trace.SpanContextFromContext(ctx)
		var fromMeta trace.SpanContext
		if p != nil {
			fromMeta = metaTraceContext(p.GetMeta())
		}
		switch {
		case fromMeta.IsValid():
			parent = trace.ContextWithRemoteSpanContext(ctx, fromMeta)
			if ambient.IsValid() {
				opts = append(opts, trace.WithLinks(trace.Link{SpanContext: ambient}))
			}
		case !ambient.IsValid():
			if v, ok := g.sessions.Load(ss); ok {
				parent = trace.ContextWithRemoteSpanContext(ctx, engine.RequestSpanContext(v.(*session).id))
			}
		}
		if extra := req.GetExtra(); extra != nil && extra.Header != nil {
			attrs = append(attrs, attribute.String(attrNetTransport, "tcp"), attribute.String(attrNetProtocol, "http"))
			if hc := trace.SpanContextFromContext(traceContext.Extract(context.Background(), propagation.HeaderCarrier(extra.Header))); hc.IsValid() {
				opts = append(opts, trace.WithLinks(trace.Link{SpanContext: hc}))
			}
		} else {
			attrs = append(attrs, attribute.String(attrNetTransport, "pipe"))
		}
		if ss != nil && ss.ID() != "" {
			attrs = append(attrs, attribute.String(attrMCPSessionID, ss.ID()))
		}
		if v, ok := req.(interface{ ProtocolVersion() string }); ok && method != "initialize" {
			if pv := v.ProtocolVersion(); pv != "" {
				attrs = append(attrs, attribute.String(attrMCPProtocol, pv))
			}
		}
		ctx, span := g.tracer.Start(parent, name, append(opts, trace.WithAttributes(attrs...))...)
		res, err := next(ctx, method, req)
		endSpan(span, res, err)
		return res, err
	}
}

// traceClient is the sending middleware of upstream u's client when the gateway
// traces: each request or notification the gateway sends u is a CLIENT span, a child
// of the context it is sent in (the client's call it serves), whose trace context is
// put in a copy of the message's params._meta (traceparent, tracestate). The
// attributes: mcp.method.name, the target's, mcp.session.id, mcp.protocol.version,
// network.transport (pipe for a spawned server, tcp over HTTP, then with
// network.protocol.name, server.address and server.port), and jsonrpc.request.id,
// which the transport sets once the message has its id (tagRequestID).
func (u *upstream) traceClient(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		p := paramsOf(req)
		name, attrs := describe(method, p)
		attrs = append(attrs, u.transportAttrs...)
		if cs, ok := req.GetSession().(*mcp.ClientSession); ok && cs != nil {
			if cs.ID() != "" {
				attrs = append(attrs, attribute.String(attrMCPSessionID, cs.ID()))
			}
			if init := cs.InitializeResult(); init != nil && init.ProtocolVersion != "" {
				attrs = append(attrs, attribute.String(attrMCPProtocol, init.ProtocolVersion))
			}
		}
		ctx, span := u.g.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
		if p != nil {
			meta := maps.Clone(p.GetMeta()) // the caller's map stays as it was
			if meta == nil {
				meta = map[string]any{}
			}
			traceContext.Inject(ctx, metaCarrier(meta))
			p.SetMeta(meta)
		}
		res, err := next(ctx, method, req)
		endSpan(span, res, err)
		return res, err
	}
}

// transportAttributes are the network attributes of the client spans of server s.
func transportAttributes(stdio bool, endpoint string) []attribute.KeyValue {
	if stdio {
		return []attribute.KeyValue{attribute.String(attrNetTransport, "pipe")}
	}
	attrs := []attribute.KeyValue{attribute.String(attrNetTransport, "tcp"), attribute.String(attrNetProtocol, "http")}
	if u, err := url.Parse(endpoint); err == nil && u.Hostname() != "" {
		attrs = append(attrs, attribute.String(attrServerAddress, u.Hostname()))
		port := u.Port()
		if port == "" && u.Scheme == "https" {
			port = "443"
		} else if port == "" {
			port = "80"
		}
		if n, err := strconv.Atoi(port); err == nil {
			attrs = append(attrs, attribute.Int(attrServerPort, n))
		}
	}
	return attrs
}

// tagRequestID sets jsonrpc.request.id on the span of ctx, the client span of the
// message, when msg is a request with an id (a call; never a notification).
func tagRequestID(ctx context.Context, msg jsonrpc.Message) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return
	}
	switch id := req.ID.Raw().(type) {
	case string:
		span.SetAttributes(attribute.String(attrJSONRPCRequestID, id))
	case int64:
		span.SetAttributes(attribute.String(attrJSONRPCRequestID, strconv.FormatInt(id, 10)))
	}
}

// taggingTransport is the transport of a spawned upstream when the gateway traces: its
// connection's writes tag the client span of each request with its id.
type taggingTransport struct{ mcp.Transport }

func (t taggingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return taggingConn{c}, nil
}

type taggingConn struct{ mcp.Connection }

func (c taggingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	tagRequestID(ctx, msg)
	return c.Connection.Write(ctx, msg)
}

// tagRequests is the HTTP round tripper of an HTTP upstream when the gateway traces:
// it tags the client span of the request a POST carries with the request's id, read
// from a copy of the body. (The streamable client's connection cannot be wrapped: the
// SDK tells it of session changes through an unexported method.)
type tagRequests struct{ base http.RoundTripper }

func (t tagRequests) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && r.GetBody != nil && trace.SpanFromContext(r.Context()).IsRecording() {
		if body, err := r.GetBody(); err == nil {
			data, err := io.ReadAll(body)
			_ = body.Close()
			if err == nil {
				if msg, err := jsonrpc.DecodeMessage(data); err == nil {
					tagRequestID(r.Context(), msg)
				}
			}
		}
	}
	return t.base.RoundTrip(r)
}
