GO ?= go
PKGS := ./...
RACE_PKGS := ./engine/...

.PHONY: build test test-go test-race test-policies bench lint fmt

build:
	$(GO) build ./...

## test: every Go test (race detector on the concurrent packages) and the Rego policy tests.
test: test-race test-go test-policies

test-race:
	$(GO) test -race -count=1 $(RACE_PKGS)

test-go:
	$(GO) test -count=1 $(PKGS)

test-policies:
	$(GO) tool opa test policies/

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

lint:
	@test -z "$$(gofmt -l .)" || { gofmt -l .; echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet $(PKGS)
	$(GO) tool staticcheck $(PKGS)

fmt:
	gofmt -w .
	$(GO) tool opa fmt -w policies/
