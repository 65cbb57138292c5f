package main

import (
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
)

// This file is added to package main of cmd/agentd by `go build -overlay` for the
// benchmark's profiling build only: when AGENTD_BENCH_PPROF names a loopback address,
// net/http/pprof is served there, apart from the API, and mutex contention is sampled.
func init() {
	addr := os.Getenv("AGENTD_BENCH_PPROF")
	if addr == "" {
		return
	}
	runtime.SetMutexProfileFraction(5)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		panic("AGENTD_BENCH_PPROF: " + err.Error())
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	go func() { _ = http.Serve(ln, mux) }()
}
