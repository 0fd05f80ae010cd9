package sleep

import (
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/nightly"
)

func benchRequest(t nightly.Task, item []byte, r ReplayRequest, model string) bench.EpisodeRequest {
	return bench.EpisodeRequest{Item: bench.Item{ID: t.ID, TaskType: nightly.EnvName, Raw: item}, Skill: r.Doc, Split: t.Split, Sample: r.Sample, Model: model}
}
