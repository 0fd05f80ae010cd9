package ui

import (
	"context"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"
)

// Console is a command's standard output with a live status: on a
// terminal, a [Terminal] whose status line stays below the command's plain
// lines; elsewhere the plain lines alone, and each status as a plain line.
type Console struct {
	w    io.Writer
	term *Terminal
}

// IsTerminal says w is a terminal (then a [Console] on it has a status
// line).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// NewConsole writes to w; terminal says w is one.
func NewConsole(w io.Writer, terminal bool) *Console {
	c := &Console{w: w}
	if terminal {
		c.term = NewTerminal(w)
		c.w = c.term
	}
	return c
}

// Write writes plain lines (above the status line on a terminal).
func (c *Console) Write(b []byte) (int, error) { return c.w.Write(b) }

// Terminal is the live status line; nil when the output is not a
// terminal.
func (c *Console) Terminal() *Terminal { return c.term }

// Status shows a status: line as the status line on a terminal, else
// plain as a line of its own.
func (c *Console) Status(line, plain string) {
	if c.term != nil {
		c.term.SetText(line)
		return
	}
	fmt.Fprintln(c.w, plain)
}

// Close ends the status line so that what follows starts on a new line.
func (c *Console) Close() {
	if c.term != nil {
		c.term.Close()
	}
}

// ServeAnnounced is [Serve] that then writes to w where the dashboard is,
// with a token how to open it, and with launching where new runs start.
func ServeAnnounced(ctx context.Context, o Options, w io.Writer, dirs ...string) (*Server, error) {
	srv, err := Serve(ctx, o, dirs...)
	if err != nil {
		return nil, err
	}
	how := "read-only"
	if o.Launch != nil {
		how = "launching and stopping runs enabled"
	}
	if o.Token != "" {
		how = "open it once as " + srv.URL() + "?token=$" + TokenEnv + "; stopping enabled"
	}
	fmt.Fprintf(w, "dashboard: %s (%s)\n", srv.URL(), how)
	if o.Launch != nil {
		fmt.Fprintf(w, "dashboard: new runs at %snew/ on %s\n", srv.URL(), o.Launch.Fleet)
	}
	return srv, nil
}
