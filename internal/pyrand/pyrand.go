// Package pyrand reproduces CPython 3.11's random.Random: the MT19937
// generator, its seeding from an integer of any size and sign, and the
// getrandbits, _randbelow, shuffle and random methods built on it.
//
// SkillOpt plans batches, minibatches and samples with random.Random(seed)
// .shuffle, so skillfleet needs the very same permutations (spec §10.1).
// A [Rand] is not safe for concurrent use; each plan builds its own.
package pyrand

import (
	"math/big"
	"math/bits"
)

const (
	n         = 624
	m         = 397
	matrixA   = 0x9908b0df
	upperMask = 0x80000000
	lowerMask = 0x7fffffff
)

// Rand is one CPython random.Random instance.
type Rand struct {
	mt  [n]uint32
	idx int
}

// New returns the generator random.Random(seed) would build.
func New(seed int64) *Rand {
	// abs(seed) as an unsigned value; -MinInt64 wraps to 1<<63, its abs.
	u := uint64(seed)
	if seed < 0 {
		u = -u
	}
	return NewUint64(u)
}

// NewUint64 returns the generator random.Random(seed) would build for a
// non-negative seed of up to 64 bits (LiveMath's choice seeds need all 64).
func NewUint64(seed uint64) *Rand {
	r := &Rand{}
	if seed>>32 == 0 {
		r.initByArray([]uint32{uint32(seed)})
	} else {
		r.initByArray([]uint32{uint32(seed), uint32(seed >> 32)})
	}
	return r
}

// NewBig returns the generator random.Random(seed) would build for an
// integer seed of any size and sign: the key is the 32-bit little-endian
// words of abs(seed), or [0] for zero.
func NewBig(seed *big.Int) *Rand {
	words := new(big.Int).Abs(seed).Bits()
	var key []uint32
	for _, w := range words {
		for s := 0; s < bits.UintSize; s += 32 {
			key = append(key, uint32(uint64(w)>>s))
		}
	}
	for len(key) > 1 && key[len(key)-1] == 0 {
		key = key[:len(key)-1]
	}
	if len(key) == 0 {
		key = []uint32{0}
	}
	r := &Rand{}
	r.initByArray(key)
	return r
}

func (r *Rand) initGenrand(s uint32) {
	r.mt[0] = s
	for i := 1; i < n; i++ {
		prev := r.mt[i-1]
		r.mt[i] = 1812433253*(prev^(prev>>30)) + uint32(i)
	}
	r.idx = n
}

func (r *Rand) initByArray(key []uint32) {
	r.initGenrand(19650218)
	mt := &r.mt
	i, j := 1, 0
	k := max(n, len(key))
	for ; k > 0; k-- {
		prev := mt[i-1]
		mt[i] = (mt[i] ^ ((prev ^ (prev >> 30)) * 1664525)) + key[j] + uint32(j)
		i++
		j++
		if i >= n {
			mt[0] = mt[n-1]
			i = 1
		}
		if j >= len(key) {
			j = 0
		}
	}
	for k = n - 1; k > 0; k-- {
		prev := mt[i-1]
		mt[i] = (mt[i] ^ ((prev ^ (prev >> 30)) * 1566083941)) - uint32(i)
		i++
		if i >= n {
			mt[0] = mt[n-1]
			i = 1
		}
	}
	mt[0] = 0x80000000
	r.idx = n
}

func (r *Rand) generate() {
	mt := &r.mt
	var kk int
	for kk = 0; kk < n-m; kk++ {
		y := (mt[kk] & upperMask) | (mt[kk+1] & lowerMask)
		mt[kk] = mt[kk+m] ^ (y >> 1) ^ (-(y & 1) & matrixA)
	}
	for ; kk < n-1; kk++ {
		y := (mt[kk] & upperMask) | (mt[kk+1] & lowerMask)
		mt[kk] = mt[kk+(m-n)] ^ (y >> 1) ^ (-(y & 1) & matrixA)
	}
	y := (mt[n-1] & upperMask) | (mt[0] & lowerMask)
	mt[n-1] = mt[m-1] ^ (y >> 1) ^ (-(y & 1) & matrixA)
	r.idx = 0
}

// Uint32 returns the next 32-bit output (CPython's genrand_uint32).
func (r *Rand) Uint32() uint32 {
	if r.idx >= n {
		r.generate()
	}
	y := r.mt[r.idx]
	r.idx++
	y ^= y >> 11
	y ^= (y << 7) & 0x9d2c5680
	y ^= (y << 15) & 0xefc60000
	y ^= y >> 18
	return y
}

// Random returns random.random(): a float64 in [0, 1) with 53 random bits.
func (r *Rand) Random() float64 {
	a := r.Uint32() >> 5
	b := r.Uint32() >> 6
	return (float64(float64(a)*67108864.0) + float64(b)) * (1.0 / 9007199254740992.0)
}

// Bits64 returns getrandbits(k) for 0 <= k <= 64. It panics outside that
// range (use [Rand.Getrandbits] for wider values).
func (r *Rand) Bits64(k int) uint64 {
	switch {
	case k < 0 || k > 64:
		panic("pyrand: Bits64 needs 0 <= k <= 64")
	case k == 0:
		return 0
	case k <= 32:
		return uint64(r.Uint32() >> (32 - k))
	}
	// CPython fills 32-bit words least significant first; the last word
	// keeps its top k%32 bits.
	lo := uint64(r.Uint32())
	hi := uint64(r.Uint32() >> (64 - k))
	return hi<<32 | lo
}

// Getrandbits returns getrandbits(k) for any k >= 0. It panics if k < 0,
// where CPython raises ValueError.
func (r *Rand) Getrandbits(k int) *big.Int {
	if k < 0 {
		panic("pyrand: Getrandbits needs k >= 0")
	}
	if k <= 64 {
		return new(big.Int).SetUint64(r.Bits64(k))
	}
	words := make([]uint32, (k-1)/32+1)
	for i := range words {
		w := r.Uint32()
		if left := k - 32*i; left < 32 {
			w >>= 32 - left
		}
		words[i] = w
	}
	// Little-endian words to a big-endian byte slice.
	buf := make([]byte, 4*len(words))
	for i, w := range words {
		p := len(buf) - 4*(i+1)
		buf[p], buf[p+1], buf[p+2], buf[p+3] = byte(w>>24), byte(w>>16), byte(w>>8), byte(w)
	}
	return new(big.Int).SetBytes(buf)
}

// Randbelow returns random._randbelow(n): with k = n.bit_length(), draw
// getrandbits(k) until the value is below n. It panics if n == 0, where
// CPython would loop for ever.
func (r *Rand) Randbelow(n uint64) uint64 {
	if n == 0 {
		panic("pyrand: Randbelow needs n > 0")
	}
	k := bits.Len64(n)
	v := r.Bits64(k)
	for v >= n {
		v = r.Bits64(k)
	}
	return v
}

// Shuffle performs random.shuffle on a sequence of length n through swap:
// for i from n-1 down to 1, j = _randbelow(i+1), swap(i, j). swap is called
// even when i == j, as CPython assigns the pair regardless.
func (r *Rand) Shuffle(n int, swap func(i, j int)) {
	for i := n - 1; i > 0; i-- {
		j := int(r.Randbelow(uint64(i) + 1))
		swap(i, j)
	}
}

// Perm returns list(range(n)) shuffled by a fresh random.Random(seed).
func Perm(seed int64, n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	New(seed).Shuffle(n, func(i, j int) { p[i], p[j] = p[j], p[i] })
	return p
}
