package mcpool

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// The pools' metrics are read from the cache at each scrape, the way
// kube-state-metrics reads objects: a deleted pool's series go with it,
// and a restarted manager serves them at once, without a reconcile.
var (
	poolDegradedDesc = prometheus.NewDesc("machina_machineconfigpool_degraded",
		"1 while the MachineConfigPool's Degraded condition is True (a node cannot apply its configuration, or it cannot be rendered), else 0.",
		[]string{"pool"}, nil)
	poolMachinesDesc = prometheus.NewDesc("machina_machineconfigpool_machines",
		"The MachineConfigPool's machine counts from its status, by state: total, updated, ready, unavailable, degraded.",
		[]string{"pool", "state"}, nil)
)

// poolCollector serves the pools' metrics from the manager's cache of the
// target cluster; the last manager set up in a process serves them.
type poolCollector struct {
	reader atomic.Pointer[client.Reader]
}

var (
	pools        poolCollector
	registerOnce sync.Once
)

// servePoolMetrics makes the collector read pools through reader, and
// registers it the first time.
func servePoolMetrics(reader client.Reader) {
	pools.reader.Store(&reader)
	registerOnce.Do(func() {
		if err := ctrlmetrics.Registry.Register(&pools); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				panic(err)
			}
		}
	})
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- poolDegradedDesc
	ch <- poolMachinesDesc
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.reader.Load()
	if r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var list mcv1.MachineConfigPoolList
	if err := (*r).List(ctx, &list); err != nil {
		return
	}
	for i := range list.Items {
		p := &list.Items[i]
		degraded := 0.0
		if meta.IsStatusConditionTrue(p.Status.Conditions, mcv1.PoolDegraded) {
			degraded = 1
		}
		ch <- prometheus.MustNewConstMetric(poolDegradedDesc, prometheus.GaugeValue, degraded, p.Name)
		st := p.Status
		for state, n := range map[string]int32{
			"total": st.MachineCount, "updated": st.UpdatedMachineCount, "ready": st.ReadyMachineCount,
			"unavailable": st.UnavailableMachineCount, "degraded": st.DegradedMachineCount,
		} {
			ch <- prometheus.MustNewConstMetric(poolMachinesDesc, prometheus.GaugeValue, float64(n), p.Name, state)
		}
	}
}
