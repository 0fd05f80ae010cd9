package nightly

import (
	"encoding/binary"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf16"
)

// argvRecorder writes a stand-in program that appends its arguments, one
// call a line, to a file.
func argvRecorder(t *testing.T, name string) (prog, calls string) {
	t.Helper()
	dir := t.TempDir()
	prog, calls = filepath.Join(dir, name), filepath.Join(dir, "calls")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho \"$*\" >> "+calls+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return prog, calls
}

// hostileCommand has every character the quoting must survive.
var hostileCommand = []string{"/Users/me/bin/skill fleet", "sleep", "run", "--project", `/Users/me/a "quoted" & <dir>\`, "--note", `back\\slash "end`, ""}

// plistValue is a plist's top dict as Go values (strings, ints, lists, dicts).
func plistDict(t *testing.T, text string) map[string]any {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(text))
	dec.Strict = true
	var parseValue func(start xml.StartElement) any
	parseValue = func(start xml.StartElement) any {
		switch start.Name.Local {
		case "string", "integer", "key":
			var s string
			if err := dec.DecodeElement(&s, &start); err != nil {
				t.Fatal(err)
			}
			return s
		case "array":
			var out []any
			for {
				tok, err := dec.Token()
				if err != nil {
					t.Fatal(err)
				}
				if se, ok := tok.(xml.StartElement); ok {
					out = append(out, parseValue(se))
				}
				if _, ok := tok.(xml.EndElement); ok {
					return out
				}
			}
		case "dict":
			out := map[string]any{}
			key := ""
			for {
				tok, err := dec.Token()
				if err != nil {
					t.Fatal(err)
				}
				if se, ok := tok.(xml.StartElement); ok {
					v := parseValue(se)
					if se.Name.Local == "key" {
						key = v.(string)
					} else {
						out[key] = v
					}
				}
				if _, ok := tok.(xml.EndElement); ok {
					return out
				}
			}
		}
		t.Fatalf("unexpected plist element %s", start.Name.Local)
		return nil
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "dict" {
			return parseValue(se).(map[string]any)
		}
	}
}

func TestScheduleLaunchd(t *testing.T) {
	dir := t.TempDir()
	prog, calls := argvRecorder(t, "launchctl")
	o := ScheduleOptions{Kind: SchedLaunchd, LaunchAgentsDir: dir, Launchctl: prog, Time: "4:05", Command: hostileCommand, Log: "/Users/me/Library/Logs/sleep & night.log"}
	msg, err := Schedule(o)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "dev.skillfleet.skillfleet-sleep.plist")
	if !strings.Contains(msg, path) {
		t.Errorf("message %q does not name %s", msg, path)
	}
	text := readString(t, path)
	d := plistDict(t, text)
	args := make([]string, 0)
	for _, a := range d["ProgramArguments"].([]any) {
		args = append(args, a.(string))
	}
	if !reflect.DeepEqual(args, hostileCommand) {
		t.Errorf("ProgramArguments = %q, want %q", args, hostileCommand)
	}
	cal := d["StartCalendarInterval"].(map[string]any)
	if cal["Hour"] != "4" || cal["Minute"] != "5" || d["Label"] != "dev.skillfleet.skillfleet-sleep" || d["StandardOutPath"] != o.Log || d["StandardErrorPath"] != o.Log {
		t.Errorf("plist: %v", d)
	}
	// Python's plistlib, where there is one, reads the same.
	if py, err := exec.LookPath("python3"); err == nil {
		out, err := exec.Command(py, "-c", "import plistlib,sys,json; d=plistlib.load(open(sys.argv[1],'rb')); print(json.dumps(d['ProgramArguments']))", path).CombinedOutput()
		if err != nil {
			t.Fatalf("plistlib: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), `"--project", "/Users/me/a \"quoted\" & <dir>\\"`) {
			t.Errorf("plistlib read %s", out)
		}
	}
	if got := readString(t, calls); got != "unload "+path+"\nload -w "+path+"\n" {
		t.Errorf("launchctl calls:\n%s", got)
	}
	if _, err := Unschedule(o); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left: %v", ents)
	}
	if msg, _ := Unschedule(o); !strings.Contains(msg, "no skillfleet sleep launchd agent") {
		t.Errorf("second unschedule: %q", msg)
	}
}

// splitWindows splits a command line as CommandLineToArgvW does for the
// arguments after the program name.
func splitWindows(s string) []string {
	var out []string
	i := 0
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i >= len(s) {
			return out
		}
		var b strings.Builder
		inQuote := false
		for ; i < len(s); i++ {
			c := s[i]
			if c == '\\' {
				n := 0
				for i < len(s) && s[i] == '\\' {
					n++
					i++
				}
				if i < len(s) && s[i] == '"' {
					b.WriteString(strings.Repeat(`\`, n/2))
					if n%2 == 1 {
						b.WriteByte('"')
						continue
					}
					i--
					continue
				}
				b.WriteString(strings.Repeat(`\`, n))
				i--
				continue
			}
			if c == '"' {
				inQuote = !inQuote
				continue
			}
			if !inQuote && (c == ' ' || c == '\t') {
				break
			}
			b.WriteByte(c)
		}
		out = append(out, b.String())
	}
}

type taskDef struct {
	Start   string `xml:"Triggers>CalendarTrigger>StartBoundary"`
	Days    int    `xml:"Triggers>CalendarTrigger>ScheduleByDay>DaysInterval"`
	Command string `xml:"Actions>Exec>Command"`
	Args    string `xml:"Actions>Exec>Arguments"`
	Logon   string `xml:"Principals>Principal>LogonType"`
}

func readTask(t *testing.T, path string) taskDef {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) < 2 || raw[0] != 0xFF || raw[1] != 0xFE || len(raw)%2 != 0 {
		t.Fatalf("%s is not UTF-16LE with a byte-order mark", path)
	}
	u := make([]uint16, (len(raw)-2)/2)
	for i := range u {
		u[i] = binary.LittleEndian.Uint16(raw[2+2*i:])
	}
	text := strings.Replace(string(utf16.Decode(u)), `encoding="UTF-16"`, `encoding="UTF-8"`, 1)
	var d taskDef
	if err := xml.Unmarshal([]byte(text), &d); err != nil {
		t.Fatalf("task XML: %v\n%s", err, text)
	}
	return d
}

func TestScheduleWindowsTask(t *testing.T) {
	dir := t.TempDir()
	prog, calls := argvRecorder(t, "schtasks")
	o := ScheduleOptions{Kind: SchedWindows, TaskDir: dir, Schtasks: prog, Time: "23:59", Command: hostileCommand}
	if _, err := Schedule(o); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "skillfleet-sleep.task.xml")
	d := readTask(t, path)
	if d.Start != "2020-01-01T23:59:00" || d.Days != 1 || d.Logon != "InteractiveToken" || d.Command != hostileCommand[0] {
		t.Errorf("task: %+v", d)
	}
	if got := splitWindows(d.Args); !reflect.DeepEqual(got, hostileCommand[1:]) {
		t.Errorf("arguments %s split to %q, want %q", d.Args, got, hostileCommand[1:])
	}
	if got := readString(t, calls); got != "/Create /TN skillfleet-sleep /XML "+path+" /F\n" {
		t.Errorf("schtasks calls: %q", got)
	}

	// With a log, cmd.exe runs the command and appends its output.
	o.Log = `C:\Users\me\sleep.log`
	if _, err := Schedule(o); err != nil {
		t.Fatal(err)
	}
	d = readTask(t, path)
	if d.Command != "cmd.exe" || !strings.HasPrefix(d.Args, `/c ""/Users/me/bin/skill fleet" sleep run`) || !strings.HasSuffix(d.Args, ` >> C:\Users\me\sleep.log 2>&1"`) {
		t.Errorf("logged task: %s %s", d.Command, d.Args)
	}
	if _, err := Unschedule(o); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("task definition left: %v", err)
	}
	if !strings.HasSuffix(readString(t, calls), "/Delete /TN skillfleet-sleep /F\n") {
		t.Errorf("schtasks calls: %q", readString(t, calls))
	}
}
