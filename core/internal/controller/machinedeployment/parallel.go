package machinedeployment

import (
	"errors"
	"sync"
)

// nodeWriteConcurrency bounds the requests one sync has in flight when it
// writes many nodes or machines at once (the marks of a rollout's start,
// the moves of an in-place wave). One after another, each waits for the
// API server's answer to the one before: 200 candidates took seconds before
// the first node was selected, and the twenty moves of a wave held the next
// wave back as long.
const nodeWriteConcurrency = 16

// inParallel runs fn(0) … fn(n-1) with at most nodeWriteConcurrency at
// once and returns their errors joined. Every call runs: one object's
// failure does not hold back the others' writes.
func inParallel(n int, fn func(i int) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	sem := make(chan struct{}, nodeWriteConcurrency)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := fn(i); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
