package nightly

import (
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf16"
)

// launchdLabel is the agent's label, also its plist's file name.
func (o *ScheduleOptions) launchdLabel() string { return "dev.skillfleet." + o.Name }

// LaunchdPlist is the LaunchAgent a launchd schedule installs: the
// command run at the given local time every day, output appended to the
// log.
func (o *ScheduleOptions) LaunchdPlist() string {
	h, m := o.hourMinute()
	var b strings.Builder
	esc := func(s string) string {
		var e bytes.Buffer
		_ = xml.EscapeText(&e, []byte(s))
		return e.String()
	}
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	b.WriteString(`<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">` + "\n")
	b.WriteString("<plist version=\"1.0\">\n<dict>\n")
	fmt.Fprintf(&b, "  <key>Label</key>\n  <string>%s</string>\n", esc(o.launchdLabel()))
	b.WriteString("  <key>ProgramArguments</key>\n  <array>\n")
	for _, a := range o.Command {
		fmt.Fprintf(&b, "    <string>%s</string>\n", esc(a))
	}
	b.WriteString("  </array>\n")
	fmt.Fprintf(&b, "  <key>StartCalendarInterval</key>\n  <dict>\n    <key>Hour</key>\n    <integer>%d</integer>\n    <key>Minute</key>\n    <integer>%d</integer>\n  </dict>\n", h, m)
	if o.Log != "" {
		fmt.Fprintf(&b, "  <key>StandardOutPath</key>\n  <string>%s</string>\n  <key>StandardErrorPath</key>\n  <string>%s</string>\n", esc(o.Log), esc(o.Log))
	}
	b.WriteString("  <key>ProcessType</key>\n  <string>Background</string>\n</dict>\n</plist>\n")
	return b.String()
}

func (o *ScheduleOptions) launchdPath() string {
	return filepath.Join(o.LaunchAgentsDir, o.launchdLabel()+".plist")
}

func (o *ScheduleOptions) scheduleLaunchd() (string, error) {
	path := o.launchdPath()
	if o.Launchctl != "-" {
		// Replacing a loaded agent: unload the old definition first.
		_ = run(o.Launchctl, "unload", path)
	}
	if err := writeFile(path, []byte(o.LaunchdPlist()), 0o644); err != nil {
		return "", err
	}
	if o.Launchctl != "-" {
		if err := run(o.Launchctl, "load", "-w", path); err != nil {
			return "", err
		}
	}
	return "launchd agent: " + path, nil
}

func (o *ScheduleOptions) unscheduleLaunchd() (string, error) {
	path := o.launchdPath()
	if _, err := os.Stat(path); os.IsNotExist(err) {
		return "no skillfleet sleep launchd agent installed", nil
	}
	if o.Launchctl != "-" {
		_ = run(o.Launchctl, "unload", "-w", path)
	}
	if err := os.Remove(path); err != nil {
		return "", err
	}
	return "launchd agent removed", nil
}

// windowsArg quotes one argument the way Windows programs split their
// command line (CommandLineToArgvW): backslashes are literal except
// before a quote.
func windowsArg(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n\v\"") {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	slashes := 0
	for _, r := range s {
		switch r {
		case '\\':
			slashes++
			continue
		case '"':
			b.WriteString(strings.Repeat(`\`, 2*slashes+1))
		default:
			b.WriteString(strings.Repeat(`\`, slashes))
		}
		slashes = 0
		b.WriteRune(r)
	}
	b.WriteString(strings.Repeat(`\`, 2*slashes))
	b.WriteByte('"')
	return b.String()
}

// TaskXML is the Task Scheduler definition a schtasks schedule imports:
// a daily trigger at the given local time, run as the signed-in user
// only when signed in, started late if the machine was off; output
// appended to the log through cmd.exe when there is one.
func (o *ScheduleOptions) TaskXML() string {
	h, m := o.hourMinute()
	command, args := o.Command[0], make([]string, 0, len(o.Command)-1)
	for _, a := range o.Command[1:] {
		args = append(args, windowsArg(a))
	}
	arguments := strings.Join(args, " ")
	if o.Log != "" {
		line := windowsArg(command)
		if arguments != "" {
			line += " " + arguments
		}
		// cmd /c strips the outer quotes of what follows it.
		command, arguments = "cmd.exe", `/c "`+line+` >> `+windowsArg(o.Log)+` 2>&1"`
	}
	esc := func(s string) string {
		var e bytes.Buffer
		_ = xml.EscapeText(&e, []byte(s))
		return e.String()
	}
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-16"?>` + "\n")
	b.WriteString(`<Task version="1.2" xmlns="http://schemas.microsoft.com/windows/2004/02/mit/task">` + "\n")
	b.WriteString("  <RegistrationInfo>\n    <Description>skillfleet sleep: nightly skill improvement from your sessions</Description>\n  </RegistrationInfo>\n")
	fmt.Fprintf(&b, "  <Triggers>\n    <CalendarTrigger>\n      <StartBoundary>2020-01-01T%02d:%02d:00</StartBoundary>\n      <Enabled>true</Enabled>\n      <ScheduleByDay>\n        <DaysInterval>1</DaysInterval>\n      </ScheduleByDay>\n    </CalendarTrigger>\n  </Triggers>\n", h, m)
	b.WriteString("  <Principals>\n    <Principal id=\"Author\">\n      <LogonType>InteractiveToken</LogonType>\n      <RunLevel>LeastPrivilege</RunLevel>\n    </Principal>\n  </Principals>\n")
	b.WriteString("  <Settings>\n    <MultipleInstancesPolicy>IgnoreNew</MultipleInstancesPolicy>\n    <StartWhenAvailable>true</StartWhenAvailable>\n    <DisallowStartIfOnBatteries>false</DisallowStartIfOnBatteries>\n    <ExecutionTimeLimit>PT12H</ExecutionTimeLimit>\n    <Enabled>true</Enabled>\n  </Settings>\n")
	fmt.Fprintf(&b, "  <Actions Context=\"Author\">\n    <Exec>\n      <Command>%s</Command>\n", esc(command))
	if arguments != "" {
		fmt.Fprintf(&b, "      <Arguments>%s</Arguments>\n", esc(arguments))
	}
	b.WriteString("    </Exec>\n  </Actions>\n</Task>\n")
	return b.String()
}

// utf16File is text as Task Scheduler reads an imported definition:
// UTF-16 little-endian with a byte-order mark.
func utf16File(s string) []byte {
	u := utf16.Encode([]rune(strings.ReplaceAll(s, "\n", "\r\n")))
	out := make([]byte, 2+2*len(u))
	out[0], out[1] = 0xFF, 0xFE
	for i, c := range u {
		binary.LittleEndian.PutUint16(out[2+2*i:], c)
	}
	return out
}

func (o *ScheduleOptions) taskPath() string { return filepath.Join(o.TaskDir, o.Name+".task.xml") }

func (o *ScheduleOptions) scheduleWindows() (string, error) {
	path := o.taskPath()
	if err := writeFile(path, utf16File(o.TaskXML()), 0o644); err != nil {
		return "", err
	}
	if o.Schtasks != "-" {
		if err := run(o.Schtasks, "/Create", "/TN", o.Name, "/XML", path, "/F"); err != nil {
			return "", err
		}
	}
	return "Task Scheduler task " + o.Name + " (definition: " + path + ")", nil
}

func (o *ScheduleOptions) unscheduleWindows() (string, error) {
	path := o.taskPath()
	_, statErr := os.Stat(path)
	if o.Schtasks != "-" {
		if err := run(o.Schtasks, "/Delete", "/TN", o.Name, "/F"); err != nil && os.IsNotExist(statErr) {
			return "no skillfleet sleep task installed", nil
		}
	}
	if os.IsNotExist(statErr) {
		return "no skillfleet sleep task installed", nil
	}
	if err := os.Remove(path); err != nil {
		return "", err
	}
	return "Task Scheduler task removed", nil
}
