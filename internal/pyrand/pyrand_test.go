package pyrand

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fixtures mirrors testdata/pyrand.json, written by
// scripts/fixtures/pyrand_fixtures.py with CPython 3.11's random module.
type fixtures struct {
	Python string `json:"python"`
	MaxN   int    `json:"max_n"`
	Seeds  []struct {
		Seed         string            `json:"seed"`
		PermSHA25616 string            `json:"perm_sha256_16"`
		Full         map[string]string `json:"full"`
		Random       []string          `json:"random"`
		Getrandbits  []struct {
			K     int    `json:"k"`
			Value string `json:"value"`
		} `json:"getrandbits"`
		Randbelow []struct {
			N      string   `json:"n"`
			Values []string `json:"values"`
		} `json:"randbelow"`
	} `json:"seeds"`
}

func loadFixtures(t *testing.T) fixtures {
	t.Helper()
	data, err := os.ReadFile("testdata/pyrand.json")
	if err != nil {
		t.Fatal(err)
	}
	var f fixtures
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Seeds) == 0 {
		t.Fatal("no seeds in testdata/pyrand.json")
	}
	return f
}

func parseBig(t *testing.T, s string) *big.Int {
	t.Helper()
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		t.Fatalf("bad integer %q in fixture", s)
	}
	return v
}

// newFor builds the generator through the narrowest constructor that takes
// the seed, so New and NewUint64 are covered as well as NewBig.
func newFor(seed *big.Int) *Rand {
	switch {
	case seed.IsInt64():
		return New(seed.Int64())
	case seed.IsUint64():
		return NewUint64(seed.Uint64())
	default:
		return NewBig(seed)
	}
}

func permString(p []int) string {
	s := make([]string, len(p))
	for i, v := range p {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

func shuffled(r *Rand, n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	r.Shuffle(n, func(i, j int) { p[i], p[j] = p[j], p[i] })
	return p
}

func TestShuffleMatchesCPython(t *testing.T) {
	t.Parallel()
	f := loadFixtures(t)
	for _, s := range f.Seeds {
		t.Run("seed="+s.Seed, func(t *testing.T) {
			t.Parallel()
			seed := parseBig(t, s.Seed)
			want := strings.Fields(s.PermSHA25616)
			if len(want) != f.MaxN {
				t.Fatalf("fixture has %d digests, want %d", len(want), f.MaxN)
			}
			for n := 1; n <= f.MaxN; n++ {
				for name, r := range map[string]*Rand{"narrow": newFor(seed), "big": NewBig(seed)} {
					sum := sha256.Sum256([]byte(permString(shuffled(r, n))))
					if got := hex.EncodeToString(sum[:])[:16]; got != want[n-1] {
						t.Errorf("%s: shuffle(range(%d)) digest = %s, want %s", name, n, got, want[n-1])
					}
				}
			}
			for ns, perm := range s.Full {
				n, err := strconv.Atoi(ns)
				if err != nil {
					t.Fatal(err)
				}
				var wantPerm []int
				for _, f := range strings.Fields(perm) {
					v, err := strconv.Atoi(f)
					if err != nil {
						t.Fatal(err)
					}
					wantPerm = append(wantPerm, v)
				}
				if diff := cmp.Diff(wantPerm, shuffled(newFor(seed), n)); diff != "" {
					t.Errorf("shuffle(range(%d)) mismatch (-want +got):\n%s", n, diff)
				}
				if seed.IsInt64() {
					if diff := cmp.Diff(wantPerm, Perm(seed.Int64(), n)); diff != "" {
						t.Errorf("Perm(%s, %d) mismatch (-want +got):\n%s", s.Seed, n, diff)
					}
				}
			}
		})
	}
}

func TestRandomMatchesCPython(t *testing.T) {
	t.Parallel()
	f := loadFixtures(t)
	for _, s := range f.Seeds {
		r := newFor(parseBig(t, s.Seed))
		for i, ws := range s.Random {
			want, err := strconv.ParseFloat(ws, 64)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Random(); got != want {
				t.Errorf("seed %s: random() #%d = %v, want %v", s.Seed, i, got, want)
			}
		}
	}
}

func TestGetrandbitsMatchesCPython(t *testing.T) {
	t.Parallel()
	f := loadFixtures(t)
	for _, s := range f.Seeds {
		r := newFor(parseBig(t, s.Seed))
		for _, g := range s.Getrandbits {
			if got := r.Getrandbits(g.K); got.String() != g.Value {
				t.Errorf("seed %s: getrandbits(%d) = %s, want %s", s.Seed, g.K, got, g.Value)
			}
		}
	}
}

func TestBits64AgreesWithGetrandbits(t *testing.T) {
	t.Parallel()
	for k := 0; k <= 64; k++ {
		a, b := New(int64(k)), New(int64(k))
		for range 3 {
			want := a.Getrandbits(k)
			if got := b.Bits64(k); got != want.Uint64() {
				t.Errorf("Bits64(%d) = %d, want %s", k, got, want)
			}
		}
	}
}

func TestRandbelowMatchesCPython(t *testing.T) {
	t.Parallel()
	f := loadFixtures(t)
	for _, s := range f.Seeds {
		r := newFor(parseBig(t, s.Seed))
		for _, rb := range s.Randbelow {
			nb := parseBig(t, rb.N)
			for i, ws := range rb.Values {
				if got := r.Randbelow(nb.Uint64()); strconv.FormatUint(got, 10) != ws {
					t.Errorf("seed %s: _randbelow(%s) #%d = %d, want %s", s.Seed, rb.N, i, got, ws)
				}
			}
		}
	}
}

func TestNewNegativeEqualsAbs(t *testing.T) {
	t.Parallel()
	for _, seed := range []int64{-1, -42, -(1 << 40), -9223372036854775808} {
		abs := new(big.Int).Abs(big.NewInt(seed))
		a, b := New(seed), NewBig(abs)
		for i := range 5 {
			if x, y := a.Uint32(), b.Uint32(); x != y {
				t.Errorf("New(%d) output #%d = %d, NewBig(%s) = %d", seed, i, x, abs, y)
			}
		}
	}
}

func TestPanics(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		f    func(r *Rand)
	}{
		{"Randbelow(0)", func(r *Rand) { r.Randbelow(0) }},
		{"Bits64(65)", func(r *Rand) { r.Bits64(65) }},
		{"Bits64(-1)", func(r *Rand) { r.Bits64(-1) }},
		{"Getrandbits(-1)", func(r *Rand) { r.Getrandbits(-1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", tt.name)
				}
			}()
			tt.f(New(1))
		})
	}
}

func BenchmarkNew(b *testing.B) {
	for i := range b.N {
		New(int64(i))
	}
}

func BenchmarkPerm400(b *testing.B) {
	for i := range b.N {
		Perm(int64(i), 400)
	}
}
