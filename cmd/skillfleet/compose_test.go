package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestComposeFile parses docker-compose.yml (no Docker engine runs here)
// and checks the services and how they reach each other.
func TestComposeFile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Services map[string]struct {
			Image    string   `yaml:"image"`
			Build    any      `yaml:"build"`
			Command  []string `yaml:"command"`
			Profiles []string `yaml:"profiles"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"nats", "redis", "campaign", "coordinator", "worker", "jaeger"} {
		if _, ok := c.Services[s]; !ok {
			t.Errorf("service %s missing", s)
		}
	}
	if !strings.Contains(strings.Join(c.Services["nats"].Command, " "), "-js") {
		t.Error("nats runs without JetStream (-js)")
	}
	w := strings.Join(c.Services["worker"].Command, " ")
	for _, want := range []string{"worker", "--nats=nats://nats:4222"} {
		if !strings.Contains(w, want) {
			t.Errorf("worker command %q lacks %q", w, want)
		}
	}
	// Workers serve every run: a fixed --coordinator would send the
	// campaign's results to the single-run coordinator.
	if strings.Contains(w, "--coordinator") {
		t.Errorf("worker command %q pins a coordinator", w)
	}
	// docker compose up runs the demo campaign; the single run is opt-in.
	camp := strings.Join(c.Services["campaign"].Command, " ")
	for _, want := range []string{"campaign", "--config=/configs/campaigns/sim-demo.yaml", "--nats=nats://nats:4222", "--grpc-host=0.0.0.0", "--advertise-host=campaign"} {
		if !strings.Contains(camp, want) {
			t.Errorf("campaign command %q lacks %q", camp, want)
		}
	}
	if len(c.Services["campaign"].Profiles) != 0 || len(c.Services["coordinator"].Profiles) == 0 {
		t.Error("docker compose up should start the campaign, and the single-run coordinator only with its profile")
	}
	if _, err := os.Stat(filepath.Join("..", "..", "configs", "campaigns", "sim-demo.yaml")); err != nil {
		t.Error("the compose campaign runs configs/campaigns/sim-demo.yaml, which is missing")
	}
	if !strings.Contains(strings.Join(c.Services["coordinator"].Command, " "), "--grpc-addr=0.0.0.0:7070") {
		t.Error("coordinator does not listen on :7070 for workers")
	}
	if _, err := os.Stat(filepath.Join("..", "..", "configs", "demo.yaml")); err != nil {
		t.Error("the compose coordinator trains configs/demo.yaml, which is missing")
	}
}
