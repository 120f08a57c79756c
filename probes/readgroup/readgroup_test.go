package readgroup

import (
	"sync/atomic"
	"testing"
)

func TestReadGroupRunsEveryReadAndWaits(t *testing.T) {
	var g Group
	var done atomic.Int32
	release := make(chan struct{})
	for range 5 {
		g.Go(func() {
			<-release // all five must be running at once to get past this
			done.Add(1)
		})
	}
	close(release)
	g.Wait()
	if done.Load() != 5 {
		t.Errorf("Wait returned after %d of 5 reads", done.Load())
	}
}
