GO ?= go
# Packages with concurrency (engine, stores, reload, daemon) run under the race detector.
RACE_PKGS := ./engine/... ./cmd/...
OTHER_PKGS := ./builtin/... ./schemas/...
EXAMPLE ?= examples/stock-agent

.PHONY: build run test test-race test-go test-policies bench lint fmt

## build: the agentd binary in bin/.
build:
	$(GO) build -o bin/agentd ./cmd/agentd

## run: the daemon on the stock-agent example (http://127.0.0.1:8181).
run:
	$(GO) run ./cmd/agentd serve --config $(EXAMPLE)

## test: every Go test (race detector on the concurrent packages) and the Rego policy tests.
test: test-race test-go test-policies

test-race:
	$(GO) test -race -count=1 $(RACE_PKGS)

test-go:
	$(GO) test -count=1 $(OTHER_PKGS)

test-policies:
	$(GO) tool opa test policies/

## bench: the side-by-side benchmark report.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## lint: gofmt, go vet and staticcheck.
lint:
	@test -z "$$(gofmt -l .)" || { gofmt -l .; echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

## fmt: format Go and Rego sources.
fmt:
	gofmt -w .
	$(GO) tool opa fmt -w policies/
