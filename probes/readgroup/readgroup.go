// Package readgroup runs a probe's reads that do not depend on one another
// at once: against a remote cluster they then cost one round trip
// together, not one each (BENCHMARKS.md, latency). It is errgroup's shape
// without the errors (each read keeps its own) and with panics carried to
// the caller.
package readgroup

import "sync"

// Group runs reads at once. Each read writes only its own variables; Wait
// returns when all are done. The zero Group is ready to use.
type Group struct {
	wg       sync.WaitGroup
	mu       sync.Mutex
	panicked bool
	value    any
}

// Go runs read in its own goroutine.
func (g *Group) Go(read func()) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		defer func() {
			if r := recover(); r != nil {
				g.mu.Lock()
				if !g.panicked {
					g.panicked, g.value = true, r
				}
				g.mu.Unlock()
			}
		}()
		read()
	}()
}

// Wait waits for every read. A read that panicked panics again here, in the
// probe's own goroutine, where probes.Run recovers it: a probe never takes
// the process down.
func (g *Group) Wait() {
	g.wg.Wait()
	if g.panicked {
		panic(g.value)
	}
}
