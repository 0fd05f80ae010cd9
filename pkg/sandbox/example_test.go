package sandbox_test

import (
	"context"
	"fmt"
	"time"

	"github.com/skillfleet/skillfleet/pkg/sandbox"
)

// A one-shot program whose output file comes back as data.
func ExampleSandbox_Run() {
	box, err := sandbox.New(sandbox.Options{})
	if err != nil {
		fmt.Println(err) // e.g. bwrap missing: one line saying how to install it
		return
	}
	res, err := box.Run(context.Background(), sandbox.Spec{
		Argv:    []string{"/usr/bin/sh", "-c", "tr a-z A-Z < in.txt > out.txt"},
		Files:   []sandbox.File{{Name: "in.txt", Data: []byte("hello\n")}},
		Collect: []string{"out.txt"},
		Limits:  sandbox.Limits{Wall: 10 * time.Second},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if out := res.Files["out.txt"]; out != nil && out.Type == "file" {
		fmt.Print(string(out.Data))
	}
	// Output: HELLO
}

// An agent CLI that must reach its model endpoint and nothing else: the
// endpoint is forwarded to the sandbox's own loopback. (A bridge speaking
// over stdin/stdout uses Command the same way, without Forwards.)
func ExampleSandbox_Command() {
	box, err := sandbox.New(sandbox.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd, cleanup, err := box.Command(ctx, sandbox.Spec{
		Argv:     []string{"/usr/bin/env"},
		Env:      []string{"MODEL_URL=http://127.0.0.1:8089/v1"},
		Forwards: []sandbox.Forward{{Port: 8089, Target: "127.0.0.1:8089"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup()
	_ = cmd // set Stdin/Stdout/Stderr, then cmd.Run()
}
