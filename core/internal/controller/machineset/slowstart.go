package machineset

import "sync"

// slowStartBatch calls fn count times in batches of 1, 2, 4, ... calls that
// run concurrently within a batch. After a batch with a failure it stops, so
// that a problem that fails every call (quota, a rejected template) costs a
// few calls instead of count. It returns how many calls succeeded and the
// first error seen.
func slowStartBatch(count int, fn func() error) (int, error) {
	successes := 0
	for batch := min(1, count); batch > 0; batch = min(2*batch, count-successes) {
		errs := make(chan error, batch)
		var wg sync.WaitGroup
		for range batch {
			wg.Go(func() {
				if err := fn(); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		failed := len(errs)
		successes += batch - failed
		if failed > 0 {
			return successes, <-errs
		}
	}
	return successes, nil
}
