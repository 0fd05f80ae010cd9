package nightly

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Scheduler kinds.
const (
	SchedCron    = "cron"
	SchedSystemd = "systemd"
	SchedLaunchd = "launchd"  // macOS: a LaunchAgent in ~/Library/LaunchAgents
	SchedWindows = "schtasks" // Windows: a Task Scheduler task
)

// ScheduleOptions say how to run a night every day.
type ScheduleOptions struct {
	// Kind is cron (a line in the user's crontab) or systemd (a user
	// timer). Default cron.
	Kind string
	// Time is HH:MM, local time. Default 03:17.
	Time string
	// Command is the argv to run (absolute binary path first).
	Command []string
	// Log is the file the night's output is appended to.
	Log string
	// Name tags the crontab line and names the systemd units. Default
	// skillfleet-sleep.
	Name string
	// Crontab is the crontab program (default "crontab"); tests point it at
	// a stand-in so the real user's crontab is never touched.
	Crontab string
	// SystemdDir is where user units go (default ~/.config/systemd/user).
	SystemdDir string
	// Systemctl is the systemctl program (default "systemctl"); "-" skips
	// calling it (the unit files are still written).
	Systemctl string
	// LaunchAgentsDir is where the launchd agent goes (default
	// ~/Library/LaunchAgents).
	LaunchAgentsDir string
	// Launchctl is the launchctl program (default "launchctl"); "-" skips
	// calling it (the plist is still written).
	Launchctl string
	// TaskDir is where the Task Scheduler definition is written (default
	// the user's config dir, skillfleet/); schtasks imports it from there.
	TaskDir string
	// Schtasks is the schtasks program (default "schtasks"); "-" skips
	// calling it (the task XML is still written).
	Schtasks string
}

var hhmm = regexp.MustCompile(`^([01]?\d|2[0-3]):([0-5]\d)$`)
var unitName = regexp.MustCompile(`^[A-Za-z0-9_.\-]+$`)

func (o *ScheduleOptions) defaults() error {
	o.Kind = cmp.Or(o.Kind, SchedCron)
	o.Time = cmp.Or(o.Time, "03:17")
	o.Name = cmp.Or(o.Name, "skillfleet-sleep")
	o.Crontab = cmp.Or(o.Crontab, "crontab")
	o.Systemctl = cmp.Or(o.Systemctl, "systemctl")
	if o.SystemdDir == "" {
		home, _ := os.UserHomeDir()
		o.SystemdDir = filepath.Join(home, ".config", "systemd", "user")
	}
	o.Launchctl = cmp.Or(o.Launchctl, "launchctl")
	o.Schtasks = cmp.Or(o.Schtasks, "schtasks")
	if o.LaunchAgentsDir == "" {
		home, _ := os.UserHomeDir()
		o.LaunchAgentsDir = filepath.Join(home, "Library", "LaunchAgents")
	}
	if o.TaskDir == "" {
		dir, err := os.UserConfigDir()
		if err != nil {
			dir = os.TempDir()
		}
		o.TaskDir = filepath.Join(dir, "skillfleet")
	}
	switch o.Kind {
	case SchedCron, SchedSystemd, SchedLaunchd, SchedWindows:
	default:
		return fmt.Errorf("scheduler %q: want cron, systemd, launchd or schtasks", o.Kind)
	}
	if !hhmm.MatchString(o.Time) {
		return fmt.Errorf("time %q: want HH:MM (24-hour)", o.Time)
	}
	if !unitName.MatchString(o.Name) {
		return fmt.Errorf("name %q: letters, digits, '.', '_' and '-' only", o.Name)
	}
	return nil
}

func (o *ScheduleOptions) hourMinute() (int, int) {
	m := hhmm.FindStringSubmatch(o.Time)
	h, _ := strconv.Atoi(m[1])
	mi, _ := strconv.Atoi(m[2])
	return h, mi
}

func (o *ScheduleOptions) tag() string { return "# skillfleet-sleep:" + o.Name }

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	if s != "" && regexp.MustCompile(`^[A-Za-z0-9_./:=,@+\-]+$`).MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func checkArgs(args []string) error {
	if len(args) == 0 || !filepath.IsAbs(args[0]) {
		return errors.New("schedule: the command must start with an absolute program path")
	}
	for _, a := range args {
		if strings.ContainsAny(a, "\n\r%") {
			return fmt.Errorf("schedule: argument %q holds a newline or %%", a)
		}
	}
	return nil
}

// CronLine is the crontab line a schedule installs.
func (o *ScheduleOptions) CronLine() string {
	h, m := o.hourMinute()
	var q []string
	for _, a := range o.Command {
		q = append(q, shellQuote(a))
	}
	line := fmt.Sprintf("%d %d * * * %s", m, h, strings.Join(q, " "))
	if o.Log != "" {
		line += " >> " + shellQuote(o.Log) + " 2>&1"
	}
	return line + " " + o.tag()
}

// Schedule installs (or replaces) the daily night. It returns what it did.
func Schedule(o ScheduleOptions) (string, error) {
	if err := o.defaults(); err != nil {
		return "", err
	}
	if err := checkArgs(o.Command); err != nil {
		return "", err
	}
	switch o.Kind {
	case SchedLaunchd:
		return o.scheduleLaunchd()
	case SchedWindows:
		return o.scheduleWindows()
	}
	if o.Kind == SchedCron {
		cur, err := o.readCrontab()
		if err != nil {
			return "", err
		}
		next := append(withoutTag(cur, o.tag()), o.CronLine())
		if err := o.writeCrontab(next); err != nil {
			return "", err
		}
		return "crontab line: " + o.CronLine(), nil
	}
	h, m := o.hourMinute()
	var q []string
	for _, a := range o.Command {
		q = append(q, systemdQuote(a))
	}
	svc := "[Unit]\nDescription=skillfleet sleep: nightly skill improvement from your sessions\n\n[Service]\nType=oneshot\nExecStart=" + strings.Join(q, " ") + "\n"
	if o.Log != "" {
		svc += "StandardOutput=append:" + o.Log + "\nStandardError=append:" + o.Log + "\n"
	}
	timer := fmt.Sprintf("[Unit]\nDescription=Run %s daily\n\n[Timer]\nOnCalendar=*-*-* %02d:%02d:00\nPersistent=true\n\n[Install]\nWantedBy=timers.target\n", o.Name, h, m)
	if err := writeFile(filepath.Join(o.SystemdDir, o.Name+".service"), []byte(svc), 0o644); err != nil {
		return "", err
	}
	if err := writeFile(filepath.Join(o.SystemdDir, o.Name+".timer"), []byte(timer), 0o644); err != nil {
		return "", err
	}
	if o.Systemctl != "-" {
		if err := run(o.Systemctl, "--user", "daemon-reload"); err != nil {
			return "", err
		}
		if err := run(o.Systemctl, "--user", "enable", "--now", o.Name+".timer"); err != nil {
			return "", err
		}
	}
	return "systemd user timer: " + filepath.Join(o.SystemdDir, o.Name+".timer"), nil
}

// Unschedule removes the night's crontab line or systemd timer. Removing
// one that is not there is not an error.
func Unschedule(o ScheduleOptions) (string, error) {
	if err := o.defaults(); err != nil {
		return "", err
	}
	switch o.Kind {
	case SchedLaunchd:
		return o.unscheduleLaunchd()
	case SchedWindows:
		return o.unscheduleWindows()
	}
	if o.Kind == SchedCron {
		cur, err := o.readCrontab()
		if err != nil {
			return "", err
		}
		next := withoutTag(cur, o.tag())
		if len(next) == len(cur) {
			return "no skillfleet sleep line in the crontab", nil
		}
		return "crontab line removed", o.writeCrontab(next)
	}
	if o.Systemctl != "-" {
		_ = run(o.Systemctl, "--user", "disable", "--now", o.Name+".timer")
	}
	removed := 0
	for _, ext := range []string{".timer", ".service"} {
		if err := os.Remove(filepath.Join(o.SystemdDir, o.Name+ext)); err == nil {
			removed++
		} else if !os.IsNotExist(err) {
			return "", err
		}
	}
	if o.Systemctl != "-" {
		_ = run(o.Systemctl, "--user", "daemon-reload")
	}
	if removed == 0 {
		return "no skillfleet sleep timer installed", nil
	}
	return "systemd user timer removed", nil
}

func withoutTag(lines []string, tag string) []string {
	var out []string
	for _, l := range lines {
		if strings.HasSuffix(strings.TrimSpace(l), tag) {
			continue
		}
		out = append(out, l)
	}
	return out
}

func (o *ScheduleOptions) readCrontab() ([]string, error) {
	cmd := exec.Command(o.Crontab, "-l")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if strings.Contains(strings.ToLower(errb.String()), "no crontab") {
			return nil, nil
		}
		return nil, fmt.Errorf("%s -l: %w: %s", o.Crontab, err, strings.TrimSpace(errb.String()))
	}
	s := strings.TrimRight(out.String(), "\n")
	if s == "" {
		return nil, nil
	}
	return strings.Split(s, "\n"), nil
}

func (o *ScheduleOptions) writeCrontab(lines []string) error {
	cmd := exec.Command(o.Crontab, "-")
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s -: %w: %s", o.Crontab, err, strings.TrimSpace(errb.String()))
	}
	return nil
}

func systemdQuote(s string) string {
	if regexp.MustCompile(`^[A-Za-z0-9_./:=,@+\-]+$`).MatchString(s) {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", "$$").Replace(s) + `"`
}

func run(prog string, args ...string) error {
	out, err := exec.Command(prog, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", prog, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
