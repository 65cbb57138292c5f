package main

import (
	"context"
	"errors"
	"net/http"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/agentd-dev/agentd/engine"
)

// telemetry is the daemon's OpenTelemetry setup: metrics exported in Prometheus text at
// /metrics, traces exported by OTLP/HTTP when the standard OTEL_EXPORTER_OTLP_*
// variables name an endpoint, and off otherwise.
type telemetry struct {
	meter    metric.MeterProvider
	tracer   trace.TracerProvider
	metrics  http.Handler
	shutdown func(context.Context)
}

func setupTelemetry(ctx context.Context) (*telemetry, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, err
	}
	res := resource.NewSchemaless(attribute.String("service.name", "agentd"))
	opts := []sdkmetric.Option{sdkmetric.WithReader(exporter), sdkmetric.WithResource(res)}
	if os.Getenv("OTEL_METRICS_EXEMPLAR_FILTER") == "" {
		// /metrics is Prometheus text, which has no exemplars: offering each measurement
		// to a reservoir (the SDK's default, trace-based) would cost every call for nothing.
		opts = append(opts, sdkmetric.WithExemplarFilter(exemplar.AlwaysOffFilter))
	}
	mp := sdkmetric.NewMeterProvider(opts...)
	t := &telemetry{meter: mp, tracer: tracenoop.NewTracerProvider(), metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})}
	var shutdowns []func(context.Context) error
	shutdowns = append(shutdowns, mp.Shutdown)
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" {
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, err
		}
		// The engine's generator gives a request's invoke_agent span the ids its calls'
		// spans, on any replica, name as their parent.
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res), sdktrace.WithIDGenerator(engine.IDGenerator{}))
		t.tracer = tp
		shutdowns = append(shutdowns, tp.Shutdown)
	}
	t.shutdown = func(ctx context.Context) {
		var errs []error
		for _, fn := range shutdowns {
			errs = append(errs, fn(ctx))
		}
		_ = errors.Join(errs...)
	}
	return t, nil
}
