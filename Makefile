GO ?= go
# Packages with concurrency (engine, stores, reload, daemon) run under the race detector.
RACE_PKGS := ./engine/... ./config/... ./cmd/... ./api/... ./server/... ./gateway/... ./internal/...
OTHER_PKGS := ./builtin/... ./schemas/... ./examples/embedding/...
EXAMPLE ?= examples/stock-agent
# Every fuzz target, as package:Func:count. `make fuzz` runs each for FUZZTIME; `make test`
# runs each for its count of executions (about 5s on the CI machine): a count, unlike a
# duration, cannot trip Go's race at the -fuzztime deadline ("context deadline exceeded"
# with no failing input, golang/go#75804) on a loaded machine. A test in cmd/agentd fails
# when a Fuzz function of the repository is missing here.
FUZZ_TARGETS := ./config:FuzzLoad:150 ./engine:FuzzValidatePlan:30000 ./engine:FuzzParseTraceParent:20000 ./engine:FuzzStartFrom:20000 ./engine/ref:FuzzScan:80000 \
	./engine/expr:FuzzCompile:2000 ./engine/op:FuzzCallValidate:50000 ./gateway/mcp:FuzzMetaTraceContext:5000 \
	./server:FuzzAPIBodies:8000 ./engine/policy/reads:FuzzPlanMemo_KeysSound:4000 \
	./engine/policy/reads:FuzzCanon_AgreesWithJSON:5000 ./server:FuzzParseTokenFile:20000 \
	./gateway/openai:FuzzChatRequest:6000 ./gateway/openai:FuzzUpstreamReply:10000 \
	./gateway/mcp:FuzzVetLine:3000 ./server:FuzzListQuery:10000 \
	./cmd/agentd/internal/replay:FuzzRead:3000 ./gateway/openai:FuzzVetMembers:20000 \
	./engine:FuzzAppendJSON_AgreesWithEncodingJSON:8000 ./engine/jsonread:FuzzReader_AgreesWithEncodingJSON:20000 \
	./server:FuzzFastBodies_AgreeWithEncodingJSON:20000 ./api:FuzzErrorBody:5000 ./engine/store/bolt:FuzzDecodeValue:20000 \
	./config/bundle:FuzzOpen:3000 \
	./gateway/mcp:FuzzAmbiguousURI:20000 ./engine:FuzzRepeatedMember:20000 ./config:FuzzMask_Copies:5000 \
	./engine/policy:FuzzPlanDecision_RequireApproval:5000 ./engine/store/bolt:FuzzReadFrames:20000 \
	./gateway/openai:FuzzFastRead_AgreesWithEncodingJSON:20000 ./engine/store:FuzzDecodeState_AgreesWithEncodingJSON:20000
FUZZTIME ?= 10s
# BENCH_FLAGS are extra agentd-bench flags for make bench (see bench/README.md).
BENCH_FLAGS ?=

# Release stamping of make dist and make image: `agentd version` prints both.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
# The image's creation time and its files' times: the commit's, so a rebuild is identical.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)
RELEASE_LDFLAGS = -s -w -X main.version=$(VERSION) -X main.commit=$(REVISION)
DIST_PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
IMAGE_ARCH ?= $(shell $(GO) env GOARCH)
# The image's default command, arguments separated by spaces; empty: agentd-image's
# default (image.DefaultCmd in tools/deploy/image, which the image test runs).
IMAGE_CMD ?=

.PHONY: build run generate test test-race test-go test-policies test-tools fuzz bench lint fmt image dist deploy-check

## build: the agentd binary in bin/.
build:
	$(GO) build -o bin/agentd ./cmd/agentd

## run: the daemon on the stock-agent example (http://127.0.0.1:8181). It builds bin/agentd
## and execs it, so that Ctrl-C stops the daemon itself (go run leaves its child behind).
run: build
	exec bin/agentd serve --config $(EXAMPLE)

## generate: what is generated from the action registry in builtin/ (the action $defs of
## schemas/hookset.schema.json and the README's action table); a test fails when it drifts.
generate:
	$(GO) generate ./...

## test: every Go test (race detector on the concurrent packages), the Rego policy tests,
## make deploy-check, the deployment tools' tests (tools/deploy) and a short run of every
## fuzz target. The Redis suites run against AGENTD_TEST_REDIS, or else
## a private redis-server started for the run (scripts/redis.sh), or skip without one. The
## npm packages of the Node tests are installed first (scripts/npm-deps.sh).
test:
	@./scripts/npm-deps.sh
	@fuzzcache=$$(mktemp -d) && trap 'rm -rf "$$fuzzcache"' EXIT && \
		./scripts/redis.sh with $(MAKE) --no-print-directory test-race test-go test-policies deploy-check test-tools fuzz \
			FUZZ_BY_COUNT=1 FUZZCACHE="$$fuzzcache"

test-race:
	$(GO) test -race -count=1 $(RACE_PKGS)

test-go:
	$(GO) test -count=1 $(OTHER_PKGS)

test-policies:
	$(GO) tool opa test policies/

# test-tools: the tests of the deployment tools module (tools/deploy), among them the
# image test, which builds the image and runs its entrypoint from the unpacked layers.
test-tools:
	cd tools/deploy && $(GO) test -count=1 ./...

## deploy-check: render the Helm chart (defaults and each deploy/helm/agentd/ci values
## file), build the kustomizations of deploy/kubernetes, and strictly decode every
## manifest into the Kubernetes API types (an unknown field is an error).
deploy-check:
	cd tools/deploy && $(GO) run ./cmd/deploy-check -root ../..

## image: the OCI image archive dist/agentd-image.tar (podman load / docker load), built
## with no container daemon and nothing pulled: a static agentd on an empty base.
image:
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath -ldflags "$(RELEASE_LDFLAGS)" -o dist/image/agentd ./cmd/agentd
	cd tools/deploy && $(GO) run ./cmd/agentd-image -binary ../../dist/image/agentd -arch $(IMAGE_ARCH) \
		-config ../../examples/stock-agent -out ../../dist/agentd-image.tar -cmd "$(IMAGE_CMD)" \
		-version "$(VERSION)" -revision "$(REVISION)" -created "$(SOURCE_DATE_EPOCH)"

## dist: static release binaries for linux and darwin on amd64 and arm64 in dist/, with
## dist/SHA256SUMS.
dist:
	@for p in $(DIST_PLATFORMS); do os=$${p%/*}; arch=$${p#*/}; \
		echo "build dist/agentd-$$os-$$arch"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "$(RELEASE_LDFLAGS)" \
			-o dist/agentd-$$os-$$arch ./cmd/agentd || exit 1; \
	done
	cd dist && sha256sum $(foreach p,$(DIST_PLATFORMS),agentd-$(subst /,-,$(p))) > SHA256SUMS

## fuzz: every fuzz target for FUZZTIME (default 10s) each, or with FUZZ_BY_COUNT set for
## its count of executions. The generated corpus grows in the Go build cache, or in
## FUZZCACHE when set (make test uses a fresh one, so that its few seconds go to new
## inputs rather than to replaying an ever larger corpus).
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; rest=$${t#*:}; fn=$${rest%%:*}; \
		budget=$(if $(FUZZ_BY_COUNT),$${rest#*:}x,$(FUZZTIME)); \
		echo "fuzz $$fn in $$pkg for $$budget"; \
		$(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $$budget "$$pkg" \
			$(if $(FUZZCACHE),-args -test.fuzzcachedir="$(FUZZCACHE)") || exit 1; \
	done

## bench: the side-by-side benchmark report.
bench:
	$(GO) build -o bench/bin/agentd ./cmd/agentd
	$(GO) build -o bench/bin/agentd-bench ./bench/cmd/agentd-bench
	$(GO) build -o bench/bin/openai-upstream ./examples/openai-gateway/upstream
	$(GO) tool opa version >/dev/null
	AGENTD_TEST_REDIS= scripts/redis.sh with bench/bin/agentd-bench -go "$(GO)" -agentd bench/bin/agentd -upstream bench/bin/openai-upstream \
		-opa "$$($(GO) tool -n opa)" -results bench/results $(BENCH_FLAGS)

## lint: gofmt, go vet and staticcheck.
lint:
	@test -z "$$(gofmt -l .)" || { gofmt -l .; echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

## fmt: format Go and Rego sources.
fmt:
	gofmt -w .
	$(GO) tool opa fmt -w policies/
