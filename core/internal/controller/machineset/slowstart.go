package machineset

import "sync"

// slowStartBatch calls fn(0), ..., fn(count-1) in batches of 1, 2, 4, ...
// calls that run concurrently within a batch, batches never larger than
// limit (the calls in flight at once), in order: fn(i) never starts before
// the batch of fn(i-1). After a batch with a failure it stops, so that a
// problem that fails every call (quota, a rejected template, an API server
// refusing writes) costs a few calls instead of count, while calls that all
// succeed reach the limit after a few round trips: the Kubernetes
// ReplicaSet controller's slowStartBatch. It returns how many calls
// succeeded and the first error seen.
func slowStartBatch(count, limit int, fn func(i int) error) (int, error) {
	limit = max(limit, 1)
	successes, next := 0, 0
	for batch := min(1, count); batch > 0; batch = min(2*batch, limit, count-next) {
		errs := make(chan error, batch)
		var wg sync.WaitGroup
		for i := next; i < next+batch; i++ {
			wg.Go(func() {
				if err := fn(i); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		next += batch
		failed := len(errs)
		successes += batch - failed
		if failed > 0 {
			return successes, <-errs
		}
	}
	return successes, nil
}
