package server

import (
	"go.opentelemetry.io/otel/metric"

	"github.com/agentd-dev/agentd/config/reload"
	"github.com/agentd-dev/agentd/engine"
	"github.com/agentd-dev/agentd/engine/store"
)

// hostConfig is what the tests' host builds a service from.
type hostConfig struct {
	Registry      *reload.Registry
	States        engine.StateStore
	Records       store.QueryableRecords
	MeterProvider metric.MeterProvider
}

// newService builds what agentd serve builds: the service's metrics, the driver with
// them as observer, and the service over that driver.
func newService(h hostConfig) (*Service, error) {
	svc, _, err := newMeteredService(h)
	return svc, err
}

// newMeteredService is newService that returns the service's metrics too.
func newMeteredService(h hostConfig) (*Service, *Metrics, error) {
	m, err := NewMetrics(h.MeterProvider, nil)
	if err != nil {
		return nil, nil, err
	}
	d, err := engine.NewDriver(engine.DriverConfig{Generations: h.Registry, States: h.States, Records: h.Records, Observer: m, KeepPlans: true})
	if err != nil {
		return nil, nil, err
	}
	svc, err := New(Config{Registry: h.Registry, Driver: d, Records: h.Records})
	return svc, m, err
}
