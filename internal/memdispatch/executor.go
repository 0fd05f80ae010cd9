package memdispatch

import (
	"context"
	"fmt"

	"google.golang.org/grpc"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/registry"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/worker"
)

// NewModel returns a dispatcher that runs tasks with the worker's own
// executor (benchmarks from the registry, the built-in prompts) and model
// m for every role, up to slots at once. Skill texts come from the
// dispatcher itself, as a worker fetches them from its coordinator.
func NewModel(m llm.Model, slots int) *Dispatcher {
	d := New(nil, slots)
	d.h = worker.NewExecutor(worker.ExecutorDeps{
		Client:   skillClient{d: d},
		Prompts:  prompts.New(nil),
		NewModel: func(context.Context, *pb.ModelSpec) (llm.Model, error) { return m, nil },
		NewEnv:   func(name string, c []byte) (bench.Env, error) { return registry.New(name, c) },
	})
	return d
}

// skillClient serves GetSkill from the dispatcher; the executor calls
// nothing else.
type skillClient struct {
	pb.CoordinatorClient
	d *Dispatcher
}

func (c skillClient) GetSkill(_ context.Context, in *pb.GetSkillRequest, _ ...grpc.CallOption) (*pb.GetSkillResponse, error) {
	text, ok := c.d.Skill(in.GetHash())
	if !ok {
		return nil, fmt.Errorf("memdispatch: skill %s was never added", in.GetHash())
	}
	return &pb.GetSkillResponse{Text: text}, nil
}
