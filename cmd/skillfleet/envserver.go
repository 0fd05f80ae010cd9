package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/bench/envserver"
	"github.com/skillfleet/skillfleet/pkg/bench/envserver/textgame"
	envpb "github.com/skillfleet/skillfleet/proto/skillfleet/envserver/v1"
)

// runEnvServer serves the environment-server protocol: the built-in
// household text game, or (with --bridge) a child process such as
// scripts/alfworld_bridge.py.
func runEnvServer(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("envserver", "envserver [--listen ADDR] [--games FILE | --bridge [-- CMD ARGS...]]", stderr)
	listen := fs.String("listen", "127.0.0.1:7070", "address to serve the environment-server protocol on (loopback unless you say otherwise)")
	games := fs.String("games", "", "serve the games of this layout file (e.g. a synthetic world's games.json from `data synth`) instead of the built-in ones")
	bridge := fs.Bool("bridge", false, "serve a bridge child process (the command after --, e.g. python3 scripts/alfworld_bridge.py) instead of the built-in text game; it runs in the sandbox (bubblewrap)")
	unsafeBridge := fs.Bool("unsafe-no-sandbox", false, "run the bridge child WITHOUT isolation (logged): it then sees the host's files, network and environment")
	bridgeRO := fs.String("bridge-ro", "", "comma list of further host paths the sandboxed bridge may read (e.g. a user site-packages directory)")
	bridgeMem := fs.Int("bridge-memory-mb", 4096, "address-space limit of the sandboxed bridge's processes, MB")
	// Not parse(): the bridge command after -- is positional.
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	var srv envpb.EnvServerServer = textgame.NewServer()
	what := "the built-in household text game"
	if *games != "" {
		if *bridge {
			return usageError{errors.New("envserver: --games and --bridge exclude each other")}
		}
		specs, err := textgame.LoadLayout(*games)
		if err != nil {
			return usageError{fmt.Errorf("envserver --games: %w", err)}
		}
		srv, what = textgame.NewLayoutServer(specs), fmt.Sprintf("%d games of %s", len(specs), *games)
	}
	if *bridge {
		if fs.NArg() == 0 {
			return usageError{errors.New("envserver --bridge: give the bridge command after --, e.g. -- python3 scripts/alfworld_bridge.py")}
		}
		var br *envserver.Bridge
		var err error
		if *unsafeBridge {
			fmt.Fprintln(stderr, "envserver: WARNING: --unsafe-no-sandbox: the bridge runs WITHOUT isolation (it sees the host's files, network and environment)")
			br, err = envserver.StartBridge(ctx, fs.Args(), os.Environ())
		} else {
			var ro []string
			for _, p := range strings.Split(*bridgeRO, ",") {
				if p = strings.TrimSpace(p); p != "" {
					ro = append(ro, p)
				}
			}
			br, err = envserver.StartSandboxedBridge(ctx, fs.Args(), os.Environ(), envserver.BridgeSandbox{ReadOnly: ro, MemoryMB: *bridgeMem})
			if err != nil {
				err = fmt.Errorf("envserver --bridge: %w (--unsafe-no-sandbox runs it without isolation)", err)
			}
		}
		if err != nil {
			return err
		}
		// The bridge's exit status after it is told to stop adds nothing
		// to what serving returned.
		defer func() { _ = br.Stop() }()
		srv, what = br, "bridge "+fs.Arg(0)
		if !*unsafeBridge {
			what += " (sandboxed)"
		}
	} else if fs.NArg() > 0 {
		return usageError{fmt.Errorf("envserver: unexpected arguments %q (did you mean --bridge?)", fs.Args())}
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", *listen, err)
	}
	fmt.Fprintf(stdout, "envserver: serving %s on %s\n", what, ln.Addr())
	return textgame.Serve(ctx, ln, srv)
}
