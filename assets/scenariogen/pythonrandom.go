package main

import (
	"crypto/sha512"
	"math"
)

// pythonRandom is CPython's random.Random (MT19937 seeded from a string):
// the committed scenarios were drawn from it, and regenerating them must
// draw the same paths, durations and jitter in the same order.
type pythonRandom struct {
	state [mtSize]uint32
	next  int
}

const mtSize = 624

// newPythonRandom behaves like random.Random(seed) for a str seed: the seed
// is the big-endian integer of its UTF-8 bytes followed by their SHA-512.
func newPythonRandom(seed string) *pythonRandom {
	sum := sha512.Sum512([]byte(seed))
	bigEndian := append([]byte(seed), sum[:]...)
	// CPython feeds init_by_array the integer's 32-bit words, least
	// significant first, without leading zero words.
	var key []uint32
	for end := len(bigEndian); end > 0; end -= 4 {
		var word uint32
		for i := max(end-4, 0); i < end; i++ {
			word = word<<8 | uint32(bigEndian[i])
		}
		key = append(key, word)
	}
	for len(key) > 1 && key[len(key)-1] == 0 {
		key = key[:len(key)-1]
	}
	r := &pythonRandom{}
	r.initByArray(key)
	return r
}

func (r *pythonRandom) initGenrand(s uint32) {
	r.state[0] = s
	for i := 1; i < mtSize; i++ {
		prev := r.state[i-1]
		r.state[i] = 1812433253*(prev^(prev>>30)) + uint32(i)
	}
	r.next = mtSize
}

func (r *pythonRandom) initByArray(key []uint32) {
	r.initGenrand(19650218)
	i, j := 1, 0
	for k := max(mtSize, len(key)); k > 0; k-- {
		prev := r.state[i-1]
		r.state[i] = (r.state[i] ^ ((prev ^ (prev >> 30)) * 1664525)) + key[j] + uint32(j)
		i++
		j++
		if i >= mtSize {
			r.state[0] = r.state[mtSize-1]
			i = 1
		}
		if j >= len(key) {
			j = 0
		}
	}
	for k := mtSize - 1; k > 0; k-- {
		prev := r.state[i-1]
		r.state[i] = (r.state[i] ^ ((prev ^ (prev >> 30)) * 1566083941)) - uint32(i)
		i++
		if i >= mtSize {
			r.state[0] = r.state[mtSize-1]
			i = 1
		}
	}
	r.state[0] = 0x80000000
}

func (r *pythonRandom) uint32() uint32 {
	const upperMask, lowerMask, matrixA = 0x80000000, 0x7fffffff, 0x9908b0df
	if r.next >= mtSize {
		for k := 0; k < mtSize; k++ {
			y := r.state[k]&upperMask | r.state[(k+1)%mtSize]&lowerMask
			v := r.state[(k+397)%mtSize] ^ (y >> 1)
			if y&1 != 0 {
				v ^= matrixA
			}
			r.state[k] = v
		}
		r.next = 0
	}
	y := r.state[r.next]
	r.next++
	y ^= y >> 11
	y ^= (y << 7) & 0x9d2c5680
	y ^= (y << 15) & 0xefc60000
	y ^= y >> 18
	return y
}

// Random is random.random(): a float in [0, 1) with 53 random bits.
func (r *pythonRandom) Random() float64 {
	a := float64(r.uint32() >> 5)
	b := float64(r.uint32() >> 6)
	return (float64(a*67108864.0) + b) * (1.0 / 9007199254740992.0)
}

// Below is random.randrange(n): CPython draws bit_length(n) bits and
// retries until the value is below n.
func (r *pythonRandom) Below(n int) int {
	if n <= 0 || n > math.MaxUint32 {
		panic("pythonRandom.Below: n out of range")
	}
	bits := 0
	for v := n; v > 0; v >>= 1 {
		bits++
	}
	for {
		v := int(r.uint32() >> (32 - bits))
		if v < n {
			return v
		}
	}
}

// Between is random.randrange(start, stop).
func (r *pythonRandom) Between(start, stop int) int {
	return start + r.Below(stop-start)
}
