package worker

import (
	"fmt"

	"github.com/skillfleet/skillfleet/pkg/queue"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// unservable says why this build cannot serve t, or "" when it can: a task
// written in a newer wire version, or of a kind this build does not know
// (its kind came as an unknown field). Such a task is never run: a wrong
// reading would be a wrong result.
func unservable(t *pb.Task) string {
	if v := pb.EffectiveWireVersion(t.GetWireVersion()); v > pb.WireVersion {
		return fmt.Sprintf("task %s is wire version %d; this worker speaks wire version %d", t.GetId(), v, pb.WireVersion)
	}
	if queue.KindOf(t) == "" {
		return fmt.Sprintf("task %s is of a kind this worker (wire version %d) does not know", t.GetId(), pb.WireVersion)
	}
	return ""
}

// newerKind reports whether t names no kind this build knows but carries
// fields it does not know: a task kind added after this build, which a
// newer worker may serve, unlike a task that names no kind at all.
func newerKind(t *pb.Task) bool {
	return queue.KindOf(t) == "" && len(t.ProtoReflect().GetUnknown()) > 0
}
