package store

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"
)

// cacheKeyDomain starts every hashed key; changing it (a new serialization
// of cached values, say) orphans every existing entry at once.
const cacheKeyDomain = "skillfleet/cache/v1"

// CacheKey returns the content address of a cached value: the hex SHA-256
// of the parts, each length-prefixed so that ("ab", "c") and ("a", "bc")
// differ. The parts must name everything the value depends on; for a
// rollout that is, in this order, the skill's content hash, the item id,
// the benchmark config hash, the target model with its sampling parameters
// and the sample index (see [RolloutKey]). Anything left out would let a
// changed input read a stale value.
func CacheKey(parts ...string) string {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, p := range append([]string{cacheKeyDomain}, parts...) {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(p)))])
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// RolloutKey names the inputs that determine a rollout's result.
type RolloutKey struct {
	// SkillHash is the content hash of the skill document the agent ran with.
	SkillHash string
	// ItemID is the benchmark item.
	ItemID string
	// BenchConfigHash hashes the benchmark configuration (env settings,
	// scorer, harness) so a changed benchmark never hits an old entry.
	BenchConfigHash string
	// Model is the target model, including its endpoint when two endpoints
	// may serve different weights under one name.
	Model string
	// Sampling is a canonical rendering of the sampling parameters
	// (temperature, top_p, max tokens, seed), fixed order.
	Sampling string
	// Sample is the index of this sample among repeated rollouts of the item.
	Sample int
}

// Key returns the rollout's [CacheKey].
func (k RolloutKey) Key() string {
	return CacheKey(k.SkillHash, k.ItemID, k.BenchConfigHash, k.Model, k.Sampling, strconv.Itoa(k.Sample))
}
