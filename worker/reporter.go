package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// reporter keeps one Report stream open to the coordinator and matches acks
// to the results that asked for them. It reconnects when the stream breaks;
// results in flight on a broken stream are re-sent on the next one.
type reporter struct {
	client pb.CoordinatorClient
	log    *slog.Logger

	mu      sync.Mutex
	stream  pb.Coordinator_ReportClient
	waiters map[string][]chan *pb.ReportAck
	sendMu  sync.Mutex
}

func newReporter(c pb.CoordinatorClient, log *slog.Logger) *reporter {
	return &reporter{client: c, log: log, waiters: map[string][]chan *pb.ReportAck{}}
}

var errStreamBroken = errors.New("report stream broken")

// report sends res and waits for the coordinator's ack, retrying across
// stream breaks until ctx ends.
func (r *reporter) report(ctx context.Context, res *pb.Result) (*pb.ReportAck, error) {
	delay := 50 * time.Millisecond
	for {
		ack, err := r.try(ctx, res)
		if err == nil {
			return ack, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		r.log.Warn("report failed, retrying", "task_id", res.GetTaskId(), "err", err, "retry_in", delay.String())
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(delay*2, 3*time.Second)
	}
}

func (r *reporter) try(ctx context.Context, res *pb.Result) (*pb.ReportAck, error) {
	s, err := r.ensure(ctx)
	if err != nil {
		return nil, err
	}
	ch := make(chan *pb.ReportAck, 1)
	id := res.GetTaskId()
	r.mu.Lock()
	r.waiters[id] = append(r.waiters[id], ch)
	r.mu.Unlock()
	r.sendMu.Lock()
	err = s.Send(res)
	r.sendMu.Unlock()
	if err != nil {
		r.drop(id, ch)
		r.broken(s)
		return nil, fmt.Errorf("send result: %w", err)
	}
	select {
	case a := <-ch:
		if a == nil {
			return nil, errStreamBroken
		}
		return a, nil
	case <-ctx.Done():
		r.drop(id, ch)
		return nil, ctx.Err()
	}
}

func (r *reporter) drop(id string, ch chan *pb.ReportAck) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ws := r.waiters[id]
	for i, w := range ws {
		if w == ch {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(r.waiters, id)
	} else {
		r.waiters[id] = ws
	}
}

func (r *reporter) ensure(ctx context.Context) (pb.Coordinator_ReportClient, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stream != nil {
		return r.stream, nil
	}
	// The stream lives as long as the worker, not as long as this call.
	s, err := r.client.Report(context.WithoutCancel(ctx))
	if err != nil {
		return nil, fmt.Errorf("open report stream: %w", err)
	}
	r.stream = s
	go r.recv(s)
	return s, nil
}

func (r *reporter) recv(s pb.Coordinator_ReportClient) {
	for {
		a, err := s.Recv()
		if err != nil {
			r.broken(s)
			return
		}
		r.mu.Lock()
		ws := r.waiters[a.GetTaskId()]
		var ch chan *pb.ReportAck
		if len(ws) > 0 {
			ch = ws[0]
			ws = ws[1:]
			if len(ws) == 0 {
				delete(r.waiters, a.GetTaskId())
			} else {
				r.waiters[a.GetTaskId()] = ws
			}
		}
		r.mu.Unlock()
		if ch != nil {
			ch <- a
		}
	}
}

// broken forgets a failed stream and wakes everyone waiting on it.
func (r *reporter) broken(s pb.Coordinator_ReportClient) {
	r.mu.Lock()
	if r.stream != s {
		r.mu.Unlock()
		return
	}
	r.stream = nil
	for id, ws := range r.waiters {
		for _, ch := range ws {
			select {
			case ch <- nil:
			default:
			}
		}
		delete(r.waiters, id)
	}
	r.mu.Unlock()
	// CloseSend must not run while another goroutine sends on the stream.
	r.sendMu.Lock()
	_ = s.CloseSend()
	r.sendMu.Unlock()
}

func (r *reporter) close() {
	r.mu.Lock()
	s := r.stream
	r.mu.Unlock()
	if s != nil {
		r.sendMu.Lock()
		_ = s.CloseSend()
		r.sendMu.Unlock()
	}
}
