package process

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// readyClient bounds one readiness request: a process that accepts the
// connection but does not answer is asked again.
var readyClient = &http.Client{Timeout: 2 * time.Second}

// ProbeHTTP asks url once. It reports whether the answer was 200 and the
// status seen ("no answer" with the error when there was none), for a
// caller that waits with its own loop.
func ProbeHTTP(ctx context.Context, url string) (bool, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, "", err
	}
	resp, err := readyClient.Do(req)
	if err != nil {
		return false, "no answer", err
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK, resp.Status, nil
}

// WaitHTTP waits until url answers 200, polling every interval. It fails
// at once when p or one of also exits (with the last lines of that one's
// log), and after timeout with the last lines of p's log.
func WaitHTTP(ctx context.Context, url string, timeout, interval time.Duration, p *Process, also ...*Process) error {
	deadline := time.Now().Add(timeout)
	for {
		for _, q := range append([]*Process{p}, also...) {
			if !q.Running() {
				return q.ExitError(25)
			}
		}
		ok, status, err := ProbeHTTP(ctx, url)
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				status = fmt.Sprintf("%s (%v)", status, err)
			}
			return fmt.Errorf("%s did not answer 200 on %s within %s (last: %s); last lines of %s:\n%s", p.Name(), url, timeout, status, p.outputName(), p.Tail(25))
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
