package rpcserver

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

type ackAll struct{ n int }

func (a *ackAll) Record(_ *pb.Result, done func(pb.ReportAck_Status, error)) {
	a.n++
	done(pb.ReportAck_STATUS_RECORDED, nil)
}

type noSkills struct{}

func (noSkills) Skill(string) (string, error) { return "", ErrSkillNotFound }

// A worker keeps its Report stream open between results; Drain must end it
// so that the coordinator's graceful stop does not wait for its timeout.
func TestDrainEndsOpenReportStreams(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &ackAll{}
	s := New("c1", rec, noSkills{}, nil, 0)
	g := grpc.NewServer()
	pb.RegisterCoordinatorServer(g, s)
	go func() { _ = g.Serve(lis) }()
	defer g.Stop()

	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := pb.NewCoordinatorClient(conn).Report(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&pb.Result{TaskId: "t1"}); err != nil {
		t.Fatal(err)
	}
	ack, err := st.Recv()
	if err != nil || ack.GetTaskId() != "t1" || ack.GetStatus() != pb.ReportAck_STATUS_RECORDED {
		t.Fatalf("ack = %v, %v", ack, err)
	}

	stopped := make(chan struct{})
	go func() {
		s.Drain()
		g.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(3 * time.Second):
		t.Fatal("graceful stop still waits for the open report stream after Drain")
	}
	if _, err := st.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("stream after Drain: got %v, want io.EOF", err)
	}
	if rec.n != 1 {
		t.Fatalf("recorded %d results, want 1", rec.n)
	}
}
