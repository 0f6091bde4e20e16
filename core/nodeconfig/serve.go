package nodeconfig

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// renewEvery is how often a running replica makes a new certificate, well
// within certLifetime.
const renewEvery = 10 * 24 * time.Hour

// Endpoint serves Server over HTTPS on Addr, with a self-signed
// certificate for Names that it publishes in the ConfigMap CA. It runs on
// every replica, leader or not (it only reads), as a runnable of a
// controller-runtime manager.
type Endpoint struct {
	Server *Server
	// Addr is the address to listen on (host:port).
	Addr string
	// Names are the DNS names and IP addresses agents reach the server by
	// (the Service's name, 127.0.0.1 in the demo).
	Names []string
	// CA is the ConfigMap that holds the replicas' certificates.
	CA types.NamespacedName
	// Publisher writes that ConfigMap.
	Publisher client.Client

	cert atomic.Pointer[tls.Certificate]
	addr atomic.Pointer[string]
}

// Address is the address the server listens on, "" before it does.
func (e *Endpoint) Address() string {
	if a := e.addr.Load(); a != nil {
		return *a
	}
	return ""
}

// NeedLeaderElection is false: every replica serves.
func (e *Endpoint) NeedLeaderElection() bool { return false }

// Start listens, publishes the certificate and serves until ctx ends. It
// fails when it cannot listen; a ConfigMap it cannot write yet is retried
// (the agents cannot connect until it is written, and say so).
func (e *Endpoint) Start(ctx context.Context) error {
	entry, err := replicaEntry()
	if err != nil {
		return err
	}
	if err := e.renew(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", e.Addr)
	if err != nil {
		return fmt.Errorf("node configuration server: %w", err)
	}
	srv := &http.Server{
		Handler:           e.Server.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{
			MinVersion:     tls.VersionTLS12,
			GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return e.cert.Load(), nil },
		},
	}
	addr := ln.Addr().String()
	e.addr.Store(&addr)
	go e.keepPublished(ctx, entry)
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	e.Server.Log.Info("Serving node configurations", "address", ln.Addr().String(), "names", e.Names, "ca", e.CA.String())
	if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("node configuration server: %w", err)
	}
	return nil
}

// renew makes a new certificate.
func (e *Endpoint) renew() error {
	cert, _, err := selfSigned(e.Names, time.Now())
	if err != nil {
		return err
	}
	e.cert.Store(&cert)
	return nil
}

// keepPublished publishes the certificate until that succeeds, then makes
// and publishes a new one every renewEvery (the new one is published
// before it is served, so that no agent meets a certificate it does not
// trust yet).
func (e *Endpoint) keepPublished(ctx context.Context, entry string) {
	publishing := func(certPEM []byte) func(context.Context) bool {
		return func(ctx context.Context) bool {
			if err := publish(ctx, e.Publisher, e.CA, entry, certPEM, time.Now()); err != nil {
				e.Server.Log.Error(err, "Publishing the node configuration server's certificate: agents cannot trust it "+
					"until it is (install deploy/node-agent, which lets the manager write it, or turn the server off with "+
					"--node-config-bind-address=0)", "configMap", e.CA.String())
				return false
			}
			return true
		}
	}
	for {
		retryPublish(ctx, publishing(pemOf(e.cert.Load().Leaf.Raw)))
		select {
		case <-ctx.Done():
			return
		case <-time.After(renewEvery):
		}
		cert, certPEM, err := selfSigned(e.Names, time.Now())
		if err != nil {
			e.Server.Log.Error(err, "Renewing the node configuration server's certificate")
			continue
		}
		// Old and new side by side until the new one is served.
		both := slices.Concat(certPEM, pemOf(e.cert.Load().Leaf.Raw))
		retryPublish(ctx, publishing(both))
		if ctx.Err() != nil {
			return
		}
		e.cert.Store(&cert)
	}
}

// retryPublish runs publish until it succeeds or ctx ends, 5 s apart at
// first, then a minute (a missing namespace or right is logged at each
// try; the agents cannot connect meanwhile, and say so too).
func retryPublish(ctx context.Context, publish func(context.Context) bool) {
	delay := 5 * time.Second
	for !publish(ctx) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Minute)
	}
}

// keyChars are the characters a ConfigMap key may not hold.
var keyChars = regexp.MustCompile(`[^-._a-zA-Z0-9]`)

// replicaEntry is this replica's key in the ConfigMap: its host name (the
// pod's name in a cluster) and process ID (1 in a container; several
// processes on one host in the demo and the tests).
func replicaEntry() (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("naming this replica's certificate: %w", err)
	}
	return fmt.Sprintf("%s-%d.crt", keyChars.ReplaceAllString(host, "_"), os.Getpid()), nil
}

// pemOf encodes a DER certificate.
func pemOf(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
