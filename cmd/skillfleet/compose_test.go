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
			Image   string   `yaml:"image"`
			Build   any      `yaml:"build"`
			Command []string `yaml:"command"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"nats", "redis", "coordinator", "worker", "jaeger"} {
		if _, ok := c.Services[s]; !ok {
			t.Errorf("service %s missing", s)
		}
	}
	if !strings.Contains(strings.Join(c.Services["nats"].Command, " "), "-js") {
		t.Error("nats runs without JetStream (-js)")
	}
	w := strings.Join(c.Services["worker"].Command, " ")
	for _, want := range []string{"worker", "--nats=nats://nats:4222", "--coordinator=coordinator:7070"} {
		if !strings.Contains(w, want) {
			t.Errorf("worker command %q lacks %q", w, want)
		}
	}
	if !strings.Contains(strings.Join(c.Services["coordinator"].Command, " "), "--grpc-addr=0.0.0.0:7070") {
		t.Error("coordinator does not listen on :7070 for workers")
	}
	if _, err := os.Stat(filepath.Join("..", "..", "configs", "demo.yaml")); err != nil {
		t.Error("the compose coordinator trains configs/demo.yaml, which is missing")
	}
}
