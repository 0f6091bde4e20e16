package controllertest

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
)

// Proxy forwards TCP connections to an API server until it is switched
// down; then it cuts every open connection and refuses new ones, exactly
// what a client sees when the API server becomes unreachable. It is how
// tests take one client's API server away while the test's own client,
// which goes direct, still works.
type Proxy struct {
	listener net.Listener
	backend  string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
}

// StartProxy starts a proxy in front of the API server of cfg and stops it
// when the test ends.
func StartProxy(t testing.TB, cfg *rest.Config) *Proxy {
	t.Helper()
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatalf("API server address %q: %v", cfg.Host, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listener: %v", err)
	}
	p := &Proxy{listener: l, backend: u.Host, conns: map[net.Conn]struct{}{}}
	go p.serve()
	t.Cleanup(func() {
		_ = l.Close()
		p.SetDown(true)
	})
	return p
}

// Config returns a copy of cfg that reaches the API server through the
// proxy. The serving certificate of envtest's API server names 127.0.0.1,
// so TLS verification still holds.
func (p *Proxy) Config(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Host = "https://" + p.listener.Addr().String()
	return c
}

// SetDown switches the proxy down (cutting open connections) or up again.
func (p *Proxy) SetDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		for c := range p.conns {
			_ = c.Close()
		}
		clear(p.conns)
	}
}

func (p *Proxy) serve() {
	for {
		in, err := p.listener.Accept()
		if err != nil {
			return
		}
		go p.forward(in)
	}
}

func (p *Proxy) forward(in net.Conn) {
	p.mu.Lock()
	if p.down {
		p.mu.Unlock()
		_ = in.Close()
		return
	}
	p.mu.Unlock()
	out, err := net.Dial("tcp", p.backend)
	if err != nil {
		_ = in.Close()
		return
	}
	p.mu.Lock()
	if p.down {
		p.mu.Unlock()
		_ = in.Close()
		_ = out.Close()
		return
	}
	p.conns[in] = struct{}{}
	p.conns[out] = struct{}{}
	p.mu.Unlock()

	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(out, in)
	go pipe(in, out)
	<-done
	_ = in.Close()
	_ = out.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, in)
	delete(p.conns, out)
	p.mu.Unlock()
}
