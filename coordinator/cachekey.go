package coordinator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/skillfleet/skillfleet/coordinator/dispatch"
	"github.com/skillfleet/skillfleet/coordinator/trainer"
	"github.com/skillfleet/skillfleet/pkg/store"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// targetCacheID renders what identifies a target model's answers: the
// backend, endpoint, model and options, and the sampling parameters. It is
// taken from the configuration, so a run-local endpoint (the in-process
// sim-llm on a random port) does not make every run's cache its own.
func targetCacheID(m *pb.ModelSpec) (id string) {
	var opts []string
	for k, v := range m.GetOptions() {
		opts = append(opts, k+"="+v)
	}
	sort.Strings(opts)
	temp := "default"
	if m.Temperature != nil {
		temp = fmt.Sprint(m.GetTemperature())
	}
	return strings.Join([]string{
		"backend=" + m.GetBackend(), "base_url=" + m.GetBaseUrl(), "model=" + m.GetModel(),
		"options=" + strings.Join(opts, ","),
		"temperature=" + temp, fmt.Sprint("max_tokens=", m.GetMaxTokens()), "reasoning_effort=" + m.GetReasoningEffort(),
	}, "|")
}

// RolloutCache returns the dispatcher cache for a run's rollouts over a
// shared store: a rollout's key is its [store.RolloutKey] — the skill's
// content hash, the item (id, content, split, batch seed, evaluation
// feedback), the benchmark config hash, the target model and sampling, and
// the sample index — so it is shared by every run and coordinator that
// would measure the same thing, and a changed benchmark config or model
// never reads an old entry.
func RolloutCache(s *trainer.Settings, c store.Cache) *dispatch.Cache {
	return &dispatch.Cache{Store: c, Key: func(t *pb.Task) (string, bool) {
		rt := t.GetRollout()
		if rt == nil || strings.Contains(t.GetId(), "~") {
			return "", false
		}
		return rolloutKey(s, rt).Key(), true
	}}
}

func rolloutKey(s *trainer.Settings, rt *pb.RolloutTask) store.RolloutKey {
	var fields struct {
		ID any `json:"id"`
	}
	_ = json.Unmarshal(rt.GetItem(), &fields)
	sum := sha256.Sum256(rt.GetItem())
	item := fmt.Sprintf("%v|sha256=%s|split=%s|batch_seed=%d|feedback=%t",
		fields.ID, hex.EncodeToString(sum[:12]), rt.GetSplit(), rt.GetBatchSeed(), rt.GetEvalFeedback())
	return store.RolloutKey{
		SkillHash: rt.GetSkillHash(), ItemID: item, BenchConfigHash: rt.GetBench() + "/" + s.BenchHash,
		Model: s.TargetCacheID, Sample: int(rt.GetSample()),
	}
}
