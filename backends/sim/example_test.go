package sim_test

import (
	"context"
	"fmt"

	"github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// The simulated target answers right only when the skill states the rule
// of every pitfall the question cues.
func ExampleModel_Chat() {
	m := sim.New(sim.Options{Epsilon: -1}) // no noise, for a stable example
	question := "The entry mentions the route length. " + simbench.RecordMarker + "4821."
	km, _ := simbench.Lookup("units_km")
	for _, skill := range []string{"# Skill\n- Be careful with distances.", "# Skill\n- " + km.Rule} {
		resp, err := m.Chat(context.Background(), &llm.Request{Model: "target", Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: simbench.SystemPrompt(skill)},
			{Role: llm.RoleUser, Content: simbench.UserPrompt(question)},
		}})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(simbench.ExtractAnswer(resp.Content))
	}
	// Output:
	// 4821 mi
	// 4821
}
