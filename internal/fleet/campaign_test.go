package fleet

import (
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/pkg/queue"
)

// TestStartCampaign starts an all-in-one campaign fleet (embedded NATS,
// the default two in-process workers) and a second fleet on its NATS
// (none by default), and checks that the endpoint's port is taken until
// Close.
func TestStartCampaign(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	dir := t.TempDir()
	all, err := StartCampaign(t.Context(), CampaignOptions{Dir: dir, GRPCHost: "127.0.0.1", AckWait: time.Minute, Workers: -1, Concurrency: 1, OptimizerConcurrency: 1, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	if all.Workers != 2 || !strings.HasPrefix(all.String(), "all-in-one (embedded NATS, 2 in-process workers)") {
		t.Errorf("all-in-one fleet: %d workers, %q", all.Workers, all.String())
	}
	if _, err := all.JS.KeyValue(t.Context(), queue.RunsBucket); err != nil {
		t.Errorf("run directory: %v", err)
	}
	_, port, _ := net.SplitHostPort(all.Endpoint.Addr())
	p, _ := strconv.Atoi(port)

	ext, err := StartCampaign(t.Context(), CampaignOptions{NATSURL: all.URL, GRPCHost: "127.0.0.1", AckWait: time.Minute, Workers: -1, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if ext.Workers != 0 || ext.String() != "fleet on "+all.URL {
		t.Errorf("external fleet: %d workers, %q", ext.Workers, ext.String())
	}
	ext.Close()

	if _, err := StartCampaign(t.Context(), CampaignOptions{NATSURL: all.URL, GRPCHost: "127.0.0.1", GRPCPort: p, AckWait: time.Minute, Logger: log}); err == nil || !strings.Contains(err.Error(), "campaign: listen") {
		t.Errorf("a fleet on a port in use: %v, want the listen error", err)
	}
	all.Close()
	ln, err := net.Listen("tcp", all.Endpoint.Addr())
	if err != nil {
		t.Fatalf("the endpoint's port after Close: %v", err)
	}
	_ = ln.Close()
}
