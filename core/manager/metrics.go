package manager

import (
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// metricsOptions configures the metrics server: /metrics, /configz and,
// with --profiling, /debug/pprof/. By default (--metrics-secure) it serves
// HTTPS, with the certificate of --metrics-cert-dir or a self-signed one,
// and every path answers only a caller whose bearer token the control
// cluster's API server accepts (TokenReview) and allows to get that path
// (SubjectAccessReview, a nonResourceURLs rule): the flags in /configz and
// the heap in pprof are nobody else's business. Without --metrics-secure
// it serves plain HTTP to anyone, as before.
func metricsOptions(opts Options) metricsserver.Options {
	o := metricsserver.Options{
		BindAddress:   opts.MetricsBindAddress,
		ExtraHandlers: withConfigz(extraMetricsHandlers(opts.Profiling), opts),
	}
	if opts.MetricsSecure {
		o.SecureServing = true
		o.CertDir = opts.MetricsCertDir
		o.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return o
}
