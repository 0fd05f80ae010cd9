// Command natsd runs a standalone nats-server with JetStream, built from
// the nats-server module version pinned in go.mod (Debian's is older).
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/skillfleet/skillfleet/pkg/queue"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:4222", "listen address")
	store := flag.String("store", "", "JetStream store dir (default: a temp dir)")
	flag.Parse()
	host, p, err := net.SplitHostPort(*addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "natsd:", err)
		os.Exit(2)
	}
	port, _ := strconv.Atoi(p)
	e, err := queue.StartEmbedded(queue.EmbeddedOptions{StoreDir: *store, Listen: true, Host: host, Port: port})
	if err != nil {
		fmt.Fprintln(os.Stderr, "natsd:", err)
		os.Exit(1)
	}
	fmt.Println("nats listening on", e.URL())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	e.Shutdown()
}
