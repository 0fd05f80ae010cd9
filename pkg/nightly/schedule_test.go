package nightly

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeCrontab writes a stand-in crontab program keeping its table in a file.
func fakeCrontab(t *testing.T) (prog, table string) {
	t.Helper()
	dir := t.TempDir()
	table = filepath.Join(dir, "table")
	prog = filepath.Join(dir, "crontab")
	script := "#!/bin/sh\nT=" + table + "\nif [ \"$1\" = -l ]; then [ -f \"$T\" ] || { echo 'no crontab for tester' >&2; exit 1; }; cat \"$T\"; exit 0; fi\nif [ \"$1\" = - ]; then cat > \"$T\"; exit 0; fi\nexit 2\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return prog, table
}

func TestScheduleCron(t *testing.T) {
	prog, table := fakeCrontab(t)
	o := ScheduleOptions{Crontab: prog, Time: "04:05", Command: []string{"/usr/local/bin/skillfleet", "sleep", "run", "--project", "/home/me/my proj"}, Log: "/tmp/sleep.log"}
	if err := os.WriteFile(table, []byte("0 1 * * * backup.sh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 { // scheduling twice leaves one line
		if _, err := Schedule(o); err != nil {
			t.Fatal(err)
		}
	}
	got := readString(t, table)
	want := "0 1 * * * backup.sh\n5 4 * * * /usr/local/bin/skillfleet sleep run --project '/home/me/my proj' >> /tmp/sleep.log 2>&1 # skillfleet-sleep:skillfleet-sleep\n"
	if got != want {
		t.Fatalf("crontab =\n%s\nwant\n%s", got, want)
	}
	if _, err := Unschedule(o); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, table); got != "0 1 * * * backup.sh\n" {
		t.Fatalf("crontab after unschedule = %q", got)
	}
	bad := o
	bad.Time = "25:00"
	if _, err := Schedule(bad); err == nil || !strings.Contains(err.Error(), "25:00") {
		t.Fatalf("Schedule(25:00) = %v", err)
	}
}

func TestScheduleSystemd(t *testing.T) {
	dir := t.TempDir()
	o := ScheduleOptions{Kind: SchedSystemd, SystemdDir: dir, Systemctl: "-", Command: []string{"/usr/bin/skillfleet", "sleep", "run"}}
	if _, err := Schedule(o); err != nil {
		t.Fatal(err)
	}
	timer := readString(t, filepath.Join(dir, "skillfleet-sleep.timer"))
	if !strings.Contains(timer, "OnCalendar=*-*-* 03:17:00") {
		t.Fatalf("timer:\n%s", timer)
	}
	if svc := readString(t, filepath.Join(dir, "skillfleet-sleep.service")); !strings.Contains(svc, "ExecStart=/usr/bin/skillfleet sleep run\n") {
		t.Fatalf("service:\n%s", svc)
	}
	if _, err := Unschedule(o); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("units left: %v", ents)
	}
}
