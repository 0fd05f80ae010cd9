package sleep

import (
	"github.com/skillfleet/skillfleet/pkg/bench"
	psleep "github.com/skillfleet/skillfleet/pkg/sleep"
)

func benchRequest(t psleep.Task, item []byte, r ReplayRequest, model string) bench.EpisodeRequest {
	return bench.EpisodeRequest{Item: bench.Item{ID: t.ID, TaskType: psleep.EnvName, Raw: item}, Skill: r.Doc, Split: t.Split, Sample: r.Sample, Model: model}
}
