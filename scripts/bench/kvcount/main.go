// Command kvcount counts the messages a watcher of the run directory
// (the skillfleet_runs key-value bucket) receives: every put into the
// bucket reaches every process that watches it.
//
//	kvcount --nats nats://127.0.0.1:4222 --for 10s
package main

import (
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillfleet/skillfleet/pkg/queue"
)

func main() {
	url := flag.String("nats", nats.DefaultURL, "NATS URL")
	d := flag.Duration("for", 10*time.Second, "how long to count")
	flag.Parse()
	nc, err := nats.Connect(*url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kvcount:", err)
		os.Exit(1)
	}
	defer nc.Close()
	var n, bytes atomic.Int64
	sub, err := nc.Subscribe("$KV."+queue.RunsBucket+".>", func(m *nats.Msg) {
		n.Add(1)
		bytes.Add(int64(len(m.Data)))
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "kvcount:", err)
		os.Exit(1)
	}
	time.Sleep(*d)
	_ = sub.Unsubscribe()
	s := d.Seconds()
	fmt.Printf("run directory: %.1f messages/s, %.0f bytes/s into each watcher\n", float64(n.Load())/s, float64(bytes.Load())/s)
}
