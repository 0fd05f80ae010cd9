package catalogue

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/skillfleet/skillfleet/pkg/prompts"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// optimizerPrompts says, for each optimizer prompt, the task kind it
// travels as and the reply type its answer must parse into. The prompt's
// texts, modes and payload type are pkg/prompts' (its table and
// templates); a test fails when a prompt there has no row here.
var optimizerPrompts = []struct {
	name  string
	kind  string
	reply reflect.Type
}{
	{prompts.AnalystFailure, KindReflect, reflect.TypeFor[prompts.AnalystReply]()},
	{prompts.AnalystSuccess, KindReflect, reflect.TypeFor[prompts.AnalystReply]()},
	{prompts.MergeFailure, KindMerge, reflect.TypeFor[prompts.MergeReply]()},
	{prompts.MergeSuccess, KindMerge, reflect.TypeFor[prompts.MergeReply]()},
	{prompts.MergeFinal, KindMerge, reflect.TypeFor[prompts.MergeReply]()},
	{prompts.Ranking, KindRank, reflect.TypeFor[prompts.RankReply]()},
	{prompts.LRController, KindLR, reflect.TypeFor[prompts.LRReply]()},
	{prompts.Rewrite, KindRewrite, reflect.TypeFor[prompts.RewriteReply]()},
	{prompts.SlowUpdate, KindSlowUpdate, reflect.TypeFor[prompts.SlowUpdateReply]()},
	{prompts.MetaSkill, KindMeta, reflect.TypeFor[prompts.MetaSkillReply]()},
	{prompts.Consolidate, KindConsolidate, reflect.TypeFor[prompts.ConsolidateReply]()},
}

func promptRow(name string) (kind string, reply reflect.Type, err error) {
	for _, p := range optimizerPrompts {
		if p.name == name {
			return p.kind, p.reply, nil
		}
	}
	return "", nil, fmt.Errorf("%w %q", prompts.ErrUnknownPrompt, name)
}

// PromptKind returns the task kind an optimizer prompt travels as.
func PromptKind(name string) (string, error) {
	k, _, err := promptRow(name)
	return k, err
}

// PromptTask returns the task that carries an optimizer call of the
// prompt ot names.
func PromptTask(ot *pb.OptimizerTask) (*pb.Task, error) {
	kind, err := PromptKind(ot.GetPrompt())
	if err != nil {
		return nil, err
	}
	return OptimizerTask(kind, ot)
}

// NewReply returns a pointer to a zero value of the prompt's reply type
// (*prompts.AnalystReply, ...).
func NewReply(name string) (any, error) {
	_, typ, err := promptRow(name)
	if err != nil {
		return nil, err
	}
	return reflect.New(typ).Interface(), nil
}

// CheckReply reports whether raw parses into the prompt's reply type.
func CheckReply(name string, raw []byte) error {
	v, err := NewReply(name)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("does not match the schema: %w", err)
	}
	return nil
}
