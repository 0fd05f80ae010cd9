// Command natsd runs a standalone nats-server with JetStream, built from
// the nats-server module version pinned in go.mod (Debian's is older),
// alone or as one node of a JetStream cluster:
//
//	natsd --addr 127.0.0.1:4222 --store /tmp/n1 --name n1 \
//	  --cluster 127.0.0.1:6222 --routes nats://127.0.0.1:6222,nats://127.0.0.1:6223,nats://127.0.0.1:6224
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"

	"github.com/skillfleet/skillfleet/pkg/queue"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:4222", "listen address")
	store := flag.String("store", "", "JetStream store dir (default: a temp dir)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the server to this file")
	name := flag.String("name", "", "server name (each node of a cluster needs its own; default skillfleet-embedded)")
	clusterAddr := flag.String("cluster", "", "listen for cluster routes on HOST:PORT (makes the server a JetStream cluster node)")
	clusterName := flag.String("cluster-name", "skillfleet", "the cluster's name, the same on every node")
	routes := flag.String("routes", "", "comma-separated route URLs of the cluster's nodes (nats://HOST:PORT; may include this node's own)")
	tap := flag.Bool("tap", false, "count every message published, by subject pattern, and print the counts at exit (the tap's own deliveries add to the out count)")
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
	o := queue.EmbeddedOptions{StoreDir: *store, Listen: true, Host: host, Port: port, ServerName: *name}
	if *clusterAddr != "" {
		chost, cp, err := net.SplitHostPort(*clusterAddr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "natsd: --cluster:", err)
			os.Exit(2)
		}
		cport, _ := strconv.Atoi(cp)
		o.Cluster = &queue.ClusterOptions{Name: *clusterName, Host: chost, Port: cport}
		for _, r := range strings.Split(*routes, ",") {
			if r = strings.TrimSpace(r); r != "" {
				o.Cluster.Routes = append(o.Cluster.Routes, r)
			}
		}
	} else if *routes != "" {
		fmt.Fprintln(os.Stderr, "natsd: --routes needs --cluster")
		os.Exit(2)
	}
	e, err := queue.StartEmbedded(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "natsd:", err)
		os.Exit(1)
	}
	if u := e.ClusterURL(); u != "" {
		fmt.Println("nats cluster routes on", u)
	}
	fmt.Println("nats listening on", e.URL())
	var t *tapCounts
	if *tap {
		if t, err = startTap(e); err != nil {
			fmt.Fprintln(os.Stderr, "natsd: --tap:", err)
			os.Exit(1)
		}
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	if t != nil {
		t.print(os.Stdout)
	}
	in, out := e.Traffic()
	fmt.Printf("nats traffic: %d messages in, %d out\n", in, out)
	e.Shutdown()
}
