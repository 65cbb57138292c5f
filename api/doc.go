// Package api holds the public wire types of agentd's HTTP API (docs/openapi.yaml):
// the bodies and answers of the stage calls, operation checks and finishes, effect
// updates and GET /v1/status, and the error envelope with its types.
//
// StatusOf is the one mapping of the engine's errors to HTTP statuses and error
// codes: the stage API and both gateways (gateway/openai, gateway/mcp) answer through
// it and map no refusal themselves. The engine classifies its refusal codes
// (engine.RefusalCode.Class); StatusOf maps the classes. api/client is a Go client of
// the API built on these types.
package api
