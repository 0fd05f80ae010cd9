// Command natsd runs a standalone nats-server with JetStream, built from
// the nats-server module version pinned in go.mod (Debian's is older).
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"syscall"

	"github.com/skillfleet/skillfleet/pkg/queue"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:4222", "listen address")
	store := flag.String("store", "", "JetStream store dir (default: a temp dir)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the server to this file")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "natsd:", err)
			os.Exit(2)
		}
		defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
	}
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
	in, out := e.Traffic()
	fmt.Printf("nats traffic: %d messages in, %d out\n", in, out)
	e.Shutdown()
}
