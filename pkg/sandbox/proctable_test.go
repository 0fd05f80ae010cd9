package sandbox

import (
	"bufio"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestParseStat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line string
		want Process
		ok   bool
	}{
		{"20303 (cat) R 20300 20301 12572 0 -1 4194304 102", Process{PID: 20303, PPID: 20300, PGID: 20301, SID: 12572}, true},
		// comm may hold spaces and parentheses: the last ')' ends it.
		{"7 (a b) (c)) S 1 7 7 0", Process{PID: 7, PPID: 1, PGID: 7, SID: 7}, true},
		{"8 (defunct) Z 1 8 8 0", Process{}, false},
		{"9 (gone) X 1 9 9 0", Process{}, false},
		{"10 (short) S 1 10", Process{}, false},
		{"x (bad) S 1 2 3 0", Process{}, false},
		{"11 (bad) S one 2 3 0", Process{}, false},
		{"no parentheses at all", Process{}, false},
	} {
		got, ok := parseStat(tc.line)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseStat(%q) = %+v, %v; want %+v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

// TestProcessTrees starts a shell in a session of its own with two
// children, one of which leaves for a session of its own: both walks find
// all three, and not this test's process. Once the shell is killed and
// its children are orphans, Descendants of the shell is empty, and
// GroupTree still finds the child left in the shell's session (not the
// one that left it).
func TestProcessTrees(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	cmd := exec.Command("sh", "-c", `sleep 60 & echo "a $!"; setsid sh -c 'echo "b $$"; exec sleep 60' & wait`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	root := cmd.Process.Pid
	kids := map[string]int{}
	t.Cleanup(func() {
		for _, pid := range kids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(out)
	for len(kids) < 2 && sc.Scan() {
		name, pid, _ := strings.Cut(sc.Text(), " ")
		n, err := strconv.Atoi(pid)
		if err != nil {
			t.Fatalf("the shell printed %q", sc.Text())
		}
		kids[name] = n
	}
	if len(kids) < 2 {
		t.Fatalf("the shell printed only %v", kids)
	}
	a, b := kids["a"], kids["b"]
	for name, walk := range map[string]func(int) []int{"Descendants": Descendants, "GroupTree": GroupTree} {
		got := walk(root)
		for _, pid := range []int{root, a, b} {
			if !slices.Contains(got, pid) {
				t.Errorf("%s(%d) = %v, want %d in it", name, root, got, pid)
			}
		}
		if slices.Contains(got, os.Getpid()) {
			t.Errorf("%s(%d) = %v holds this test's process", name, root, got)
		}
	}

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if got := Descendants(root); len(got) != 0 {
		t.Errorf("after the root exited, Descendants(%d) = %v, want none", root, got)
	}
	got := GroupTree(root)
	if !slices.Contains(got, a) || slices.Contains(got, b) {
		t.Errorf("after the root exited, GroupTree(%d) = %v, want %d (its session) and not %d (its own session)", root, got, a, b)
	}
}
