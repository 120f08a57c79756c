package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Identifiers and draws. What names an object (a uid, a container id, an
// image digest) is derived from what it identifies, so it is the same on
// every run and a reference can be computed before its target exists.
// Traffic, durations and jitter are drawn from math/rand/v2 with a fixed
// seed, mixed with the scenario's name: every run writes the same files, and
// a change to one story reshuffles only that story's draws.

// seed is the generator's fixed seed; changing it redraws every scenario.
const seed = 20261202

// newDraws is the random source of one scenario.
func newDraws(scenario string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(scenario))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// between draws an int in [lo, hi).
func between(r *rand.Rand, lo, hi int) int { return lo + r.IntN(hi-lo) }

// randomUUID draws a version-4 UUID: request ids, istiod's nonces.
func randomUUID(r *rand.Rand) string {
	b := binary.BigEndian.AppendUint64(nil, r.Uint64())
	return uuidOf(binary.BigEndian.AppendUint64(b, r.Uint64()))
}

// hashHex is the hex SHA-256 of parts joined by "/".
func hashHex(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "/")))
	return hex.EncodeToString(sum[:])
}

// hashInt is the first 32 bits of hashHex(parts...).
func hashInt(parts ...string) int {
	n, err := strconv.ParseUint(hashHex(parts...)[:8], 16, 32)
	if err != nil {
		panic(err)
	}
	return int(n)
}

// stableUID is a version-4 UUID derived from parts: a Kubernetes uid that
// owner references can name before the owner is written.
func stableUID(parts ...string) string {
	b, err := hex.DecodeString(hashHex(parts...)[:32])
	if err != nil {
		panic(err)
	}
	return uuidOf(b)
}

func uuidOf(b []byte) string {
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return fmt.Sprintf("%s-%s-%s-%s-%s", h[0:8], h[8:12], h[12:16], h[16:20], h[20:32])
}

// seconds and millis turn a story's "0.21 s after" into a duration, to the
// microsecond the components print.
func seconds(x float64) time.Duration {
	return time.Duration(math.Round(x*1e6)) * time.Microsecond
}

func millis(x float64) time.Duration {
	return time.Duration(math.Round(x*1e3)) * time.Microsecond
}
