package nodeconfig

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// publish puts certPEM into the ConfigMap key under entry (one entry per
// manager replica: the agents reach any replica through a Service and
// trust them all), and drops the entries whose certificate has expired (a
// replica that is gone).
func publish(ctx context.Context, c client.Client, key types.NamespacedName, entry string, certPEM []byte, now time.Time) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm := &corev1.ConfigMap{}
		err := c.Get(ctx, key, cm)
		if apierrors.IsNotFound(err) {
			cm = &corev1.ConfigMap{Data: map[string]string{entry: string(certPEM)}}
			cm.Namespace, cm.Name = key.Namespace, key.Name
			cm.Labels = map[string]string{"app.kubernetes.io/name": "machina-manager"}
			return c.Create(ctx, cm)
		}
		if err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		for k, v := range cm.Data {
			if k != entry && expired([]byte(v), now) {
				delete(cm.Data, k)
			}
		}
		cm.Data[entry] = string(certPEM)
		return c.Update(ctx, cm)
	})
}

// expired reports whether every certificate in data has expired; data that
// holds no certificate counts as expired.
func expired(data []byte, now time.Time) bool {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return true
		}
		if cert, err := x509.ParseCertificate(block.Bytes); err == nil && now.Before(cert.NotAfter) {
			return false
		}
	}
}

// trustBundle returns the certificates of the ConfigMap key as a pool.
func trustBundle(ctx context.Context, c client.Reader, key types.NamespacedName) (*x509.CertPool, error) {
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, key, cm); err != nil {
		return nil, fmt.Errorf("reading the node configuration servers' certificates (ConfigMap %s): %w", key, err)
	}
	pool := x509.NewCertPool()
	n := 0
	for _, v := range cm.Data {
		if pool.AppendCertsFromPEM([]byte(v)) {
			n++
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("ConfigMap %s holds no certificate of a node configuration server", key)
	}
	return pool, nil
}
