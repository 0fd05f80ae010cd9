package simbench

import (
	"crypto/sha256"
	"encoding/binary"
)

// RNG is a small deterministic generator (SplitMix64). It is ours rather
// than math/rand's so that generated worlds and simulated replies never
// change with the Go version. It is not safe for concurrent use.
type RNG struct {
	s uint64
}

// NewRNG returns a generator seeded with seed.
func NewRNG(seed uint64) *RNG { return &RNG{s: seed} }

// HashRNG returns a generator seeded with the SHA-256 of parts, each
// length-prefixed so that ("ab", "c") and ("a", "bc") differ.
func HashRNG(parts ...[]byte) *RNG {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.LittleEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	sum := h.Sum(nil)
	return NewRNG(binary.LittleEndian.Uint64(sum[:8]) ^ binary.LittleEndian.Uint64(sum[8:16]))
}

// Uint64 returns the next 64 random bits.
func (r *RNG) Uint64() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Float64 returns a number in [0, 1).
func (r *RNG) Float64() float64 { return float64(r.Uint64()>>11) / (1 << 53) }

// IntN returns a number in [0, n); it returns 0 when n <= 0.
func (r *RNG) IntN(n int) int {
	if n <= 0 {
		return 0
	}
	// Rejection sampling keeps the result unbiased.
	limit := ^uint64(0) - ^uint64(0)%uint64(n)
	for {
		if v := r.Uint64(); v < limit {
			return int(v % uint64(n))
		}
	}
}

// Shuffle permutes n elements with swap (Fisher-Yates).
func (r *RNG) Shuffle(n int, swap func(i, j int)) {
	for i := n - 1; i > 0; i-- {
		swap(i, r.IntN(i+1))
	}
}

// Chance reports true with probability p.
func (r *RNG) Chance(p float64) bool { return p > 0 && r.Float64() < p }
