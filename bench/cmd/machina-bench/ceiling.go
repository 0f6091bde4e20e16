package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// ceilingNamespace holds the objects of the write ceiling measurement. The
// manager watches only benchNamespace, so they cost it nothing.
const ceilingNamespace = "ceiling"

// CeilingResult is the API server's write rate for one kind of object at
// one client concurrency.
type CeilingResult struct {
	Kind        string  `json:"kind"`
	Concurrency int     `json:"concurrency"`
	Objects     int     `json:"objects"`
	Errors      int     `json:"errors"`
	Seconds     float64 `json:"seconds"`
	PerSecond   float64 `json:"createsPerSecond"`
	P50Millis   float64 `json:"p50Millis"`
	P99Millis   float64 `json:"p99Millis"`
}

// measureCeiling creates n objects of each kind with each concurrency, as
// fast as the API server takes them (no client-side rate limit), and
// reports the rate. The objects are about the size of the manager's: a
// ConfigMap of a few hundred bytes and a Machine as a MachineSet creates
// it.
func measureCeiling(ctx context.Context, admin *rest.Config, scheme *runtime.Scheme, n int, concurrencies []int) ([]CeilingResult, error) {
	cfg := rest.CopyConfig(admin)
	cfg.QPS = -1 // no client-side rate limiter
	cfg.Burst = 0
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ceilingNamespace}}); err != nil {
		return nil, err
	}
	kinds := []struct {
		name string
		obj  func(name string) client.Object
	}{
		{"ConfigMap", func(name string) client.Object {
			return &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ceilingNamespace, Labels: map[string]string{poolLabel: "ceiling"}},
				Data:       map[string]string{"config": "#cloud-config\nhostname: " + name + "\nruncmd:\n- kubeadm join api.bench.internal:6443\n"},
			}
		}},
		{"Machine", func(name string) client.Object {
			return &v1alpha1.Machine{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ceilingNamespace, Labels: map[string]string{poolLabel: "ceiling"}},
				Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: "ceiling"}},
			}
		}},
	}
	var out []CeilingResult
	for _, k := range kinds {
		for _, conc := range concurrencies {
			prefix := fmt.Sprintf("%s-c%d-", strings.ToLower(k.name), conc)
			res := createMany(ctx, c, n, conc, func(i int) client.Object { return k.obj(fmt.Sprintf("%s%d", prefix, i)) })
			res.Kind = k.name
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			fmt.Printf("  ceiling: %-9s concurrency=%-3d n=%d errors=%d %.2fs %.0f creates/s p50=%.1fms p99=%.1fms\n",
				res.Kind, res.Concurrency, res.Objects, res.Errors, res.Seconds, res.PerSecond, res.P50Millis, res.P99Millis)
			out = append(out, res)
		}
	}
	return out, nil
}

// createMany creates n objects with conc goroutines and times each create.
func createMany(ctx context.Context, c client.Client, n, conc int, obj func(int) client.Object) CeilingResult {
	lat := make([]time.Duration, n)
	var next, errs atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				if err := c.Create(ctx, obj(i)); err != nil {
					errs.Add(1)
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(lat)
	return CeilingResult{
		Concurrency: conc,
		Objects:     n,
		Errors:      int(errs.Load()),
		Seconds:     elapsed.Seconds(),
		PerSecond:   float64(n) / elapsed.Seconds(),
		P50Millis:   millis(quantile(lat, 0.50)),
		P99Millis:   millis(quantile(lat, 0.99)),
	}
}

// quantile returns the q-quantile of sorted durations (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted)) + 0.5)
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
