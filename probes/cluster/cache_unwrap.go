package cluster

// Unwrap is the Cluster the cache reads through. Reads that must not be
// memoised go there: counters sampled twice to make a rate, and the actions
// (probes/actions) that only a live cluster can run.
func (c *Cache) Unwrap() Cluster { return c.c }

// Uncached strips memoising wrappers from c, so that two reads of the same
// path see the cluster at two moments.
func Uncached(c Cluster) Cluster {
	for {
		u, ok := c.(interface{ Unwrap() Cluster })
		if !ok {
			return c
		}
		c = u.Unwrap()
	}
}
