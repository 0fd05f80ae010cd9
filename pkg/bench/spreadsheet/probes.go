package spreadsheet

// Containment probes: one hostile program per attack class found against
// the earlier sandbox (issue 24), run through the benchmark's own path
// (RunCase) on a scratch dataset whose gold files and a directory are
// world-writable and next to listeners on TCP loopback and on filesystem
// and abstract AF_UNIX sockets, so that only the isolation keeps the
// programs away. Every program first switches the audit hook off: the
// kernel layer is tested alone. `skillfleet sandbox check` runs them; the
// tests run them as root and as an unprivileged worker.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/xuri/excelize/v2"
)

// Probe is one attack class.
type Probe struct {
	Class string
	// Program is the hostile program, with {{GOLD}}, {{ROOT}}, {{OPEN}},
	// {{SOCK}}, {{ABSTRACT}}, {{PORT}} and {{MARK}} filled in by the host.
	Program string
	// Allowed are the outcomes it may end with (never a pass).
	Allowed []Outcome
	check   func(h *ProbeHost, cr CaseResult) string
}

// hookOff disables the audit hook (the second layer) and proves it.
const hookOff = `import sys, os
sys.modules['__main__']._hook.__code__ = (lambda e, a: None).__code__
open('/tmp/hook-is-off', 'w').write('x')
print('HOOK-OFF')
def attempt(what, f):
    try:
        f()
        print('DONE', what)
    except BaseException as e:
        print('REFUSED', what, type(e).__name__, e)
`

var Probes = []Probe{
	{Class: "gold copy: find the answer file and copy it", Allowed: []Outcome{OutcomeNoOutput}, Program: hookOff + `
import shutil
found = []
for top in ['/', '{{ROOT}}', os.path.dirname('{{GOLD}}')]:
    for d, ds, fs in os.walk(top):
        ds[:] = [x for x in ds if not (d == '/' and x == 'proc')]
        found += [os.path.join(d, f) for f in fs if f.endswith('_answer.xlsx') or f.endswith('golden.xlsx')]
print('FOUND', found)
for p in found + ['{{GOLD}}']:
    attempt('copy ' + p, lambda: shutil.copyfile(p, OUTPUT_PATH))
    if os.path.exists(OUTPUT_PATH):
        break
`, check: func(h *ProbeHost, cr CaseResult) string {
		if !strings.Contains(cr.Run.Output, "FOUND []") {
			return "the program found gold files"
		}
		return ""
	}},
	{Class: "gold overwrite", Allowed: []Outcome{OutcomeNoOutput}, Program: hookOff + `
attempt('write gold', lambda: open('{{GOLD}}', 'wb').write(b'owned'))
attempt('remove gold', lambda: os.remove('{{GOLD}}'))
attempt('rename over gold', lambda: (open('x', 'w').close(), os.replace('x', '{{GOLD}}')))
`},
	{Class: "hook bypass then plain writes and a shell", Allowed: []Outcome{OutcomeNoOutput}, Program: hookOff + `
attempt('open', lambda: open('{{OPEN}}/open.txt', 'w').write('x'))
attempt('os.system', lambda: os.system('echo x > {{OPEN}}/system.txt'))
import subprocess
attempt('subprocess', lambda: subprocess.run(['/usr/bin/sh', '-c', 'echo x > {{OPEN}}/subprocess.txt'], check=True))
`},
	{Class: "dir_fd, mkfifo, sqlite and ctypes writes", Allowed: []Outcome{OutcomeNoOutput}, Program: hookOff + `
import ctypes, sqlite3
def dirfd():
    fd = os.open('{{OPEN}}', os.O_RDONLY)
    os.open('dirfd.txt', os.O_WRONLY | os.O_CREAT, dir_fd=fd)
attempt('dir_fd', dirfd)
attempt('dir_fd relative to /', lambda: os.open('{{OPEN}}'.lstrip('/') + '/dirfd2.txt', os.O_WRONLY | os.O_CREAT, dir_fd=os.open('/', os.O_RDONLY)))
attempt('mkfifo', lambda: os.mkfifo('{{OPEN}}/fifo'))
attempt('sqlite', lambda: sqlite3.connect('{{OPEN}}/db.sqlite').execute('create table t(x)'))
libc = ctypes.CDLL(None, use_errno=True)
def cwrite():
    fd = libc.open(b'{{OPEN}}/ctypes.txt', 0o101, 0o666)
    if fd < 0:
        raise OSError(ctypes.get_errno(), 'ctypes open')
attempt('ctypes open', cwrite)
attempt('ctypes system', lambda: libc.system(b'echo x > {{OPEN}}/csystem.txt'))
`},
	{Class: "symlink escapes", Allowed: []Outcome{OutcomeNoOutput}, Program: hookOff + `
attempt('relative symlink dir', lambda: (os.symlink('../' * 12 + '{{OPEN}}'.lstrip('/'), 'esc'), open('esc/rel.txt', 'w').write('x')))
attempt('absolute symlink file', lambda: (os.symlink('{{OPEN}}/abs.txt', 'abs'), open('abs', 'w').write('x')))
attempt('hard link to gold', lambda: os.link('{{GOLD}}', 'goldlink'))
`},
	{Class: "fork_exec and ctypes fork", Allowed: []Outcome{OutcomeNoOutput}, Program: hookOff + `
import _posixsubprocess, subprocess, ctypes
attempt('Popen via fork_exec', lambda: subprocess.Popen(['/usr/bin/sh', '-c', 'echo x > {{OPEN}}/forkexec.txt']).wait())
libc = ctypes.CDLL(None)
pid = libc.fork()
if pid == 0:
    try:
        open('{{OPEN}}/cfork.txt', 'w').write('x')
    finally:
        os._exit(0)
os.waitpid(pid, 0)
`},
	{Class: "survivors after return", Allowed: []Outcome{OutcomeNoOutput}, Program: hookOff + `
import ctypes, time
libc = ctypes.CDLL(None)
if libc.fork() == 0:
    os.setsid()
    if libc.fork() == 0:
        os.execv(sys.executable, [sys.executable, '-c', 'import time, os\ntime.sleep(2)\nopen("{{OPEN}}/late.txt", "w").write("x")\ntime.sleep(60)', '{{MARK}}'])
    os._exit(0)
time.sleep(0.3)
print('LEFT A SURVIVOR')
`},
	{Class: "AF_UNIX and TCP to host listeners", Allowed: []Outcome{OutcomeNoOutput}, Program: hookOff + `
import socket
def unix(addr):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    s.connect(addr)
attempt('filesystem socket', lambda: unix('{{SOCK}}'))
attempt('abstract socket', lambda: unix('\0{{ABSTRACT}}'))
attempt('tcp loopback', lambda: socket.create_connection(('127.0.0.1', {{PORT}}), timeout=2))
attempt('tcp any', lambda: socket.create_connection(('10.0.2.2', {{PORT}}), timeout=2))
`},
	{Class: "FIFO as the output", Allowed: []Outcome{OutcomeNotRegular}, Program: hookOff + `
os.mkfifo(OUTPUT_PATH)
`},
	{Class: "output symlinked to the gold", Allowed: []Outcome{OutcomeNotRegular}, Program: hookOff + `
os.symlink('{{GOLD}}', OUTPUT_PATH)
`},
	{Class: "output symlinked to the input", Allowed: []Outcome{OutcomeNotRegular}, Program: hookOff + `
os.symlink(INPUT_PATH, OUTPUT_PATH)
`},
	{Class: "output is a directory", Allowed: []Outcome{OutcomeNotRegular}, Program: hookOff + `
os.mkdir(OUTPUT_PATH)
`},
	{Class: "zip bomb: a 1.5 GB sheet in a small workbook", Allowed: []Outcome{OutcomeUnreadable}, Program: hookOff + zipBomb + `
bomb(1500, honest=True)
`},
	{Class: "zip bomb that lies about its size", Allowed: []Outcome{OutcomeUnreadable, OutcomeWrong}, Program: hookOff + zipBomb + `
bomb(200, honest=False)
`},
	{Class: "a 30 MiB sheet of cells under the unzip limit", Allowed: []Outcome{OutcomeWrong, OutcomeUnreadable, OutcomeCompareTimeout}, Program: hookOff + zipBomb + `
row = b'<row><c t="inlineStr"><is><t>x</t></is></c><c><v>1</v></c></row>'
chunk = row * ((1 << 20) // len(row))
bomb(30, honest=True, head=b'<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>', chunk=chunk, foot=b'</sheetData></worksheet>')
`},
	{Class: "disk filling across many files", Allowed: []Outcome{OutcomeError}, Program: hookOff + `
total = 0
for d in ('.', '/tmp', '/dev/shm', '/dev', '/', '/usr'):
    n = 0
    try:
        for i in range(100000):
            with open(os.path.join(d, 'fill%06d' % i), 'wb') as f:
                f.write(b'x' * 65536)
            n += 1
    except OSError as e:
        print('STOPPED', d, 'after', n, 'files:', e.strerror)
    total += n
print('TOTAL MiB', total // 16)
sys.exit(5)
`, check: func(h *ProbeHost, cr CaseResult) string {
		var mib int
		for _, l := range strings.Split(cr.Run.Output, "\n") {
			if strings.HasPrefix(l, "TOTAL MiB ") {
				mib, _ = strconv.Atoi(strings.TrimPrefix(l, "TOTAL MiB "))
			}
		}
		// The probe's work_mb is 16: /work, /tmp and /dev/shm hold 48 MiB.
		if !strings.Contains(cr.Run.Output, "TOTAL MiB") || mib > 3*64 {
			return fmt.Sprintf("wrote %d MiB across the sandbox's filesystems (no size limit?)", mib)
		}
		return ""
	}},
	{Class: "host secrets and identity", Allowed: []Outcome{OutcomeUnreadable}, Program: hookOff + `
got = [repr(dict(os.environ))]
for p in ['/etc/passwd', '/etc/shadow', '/proc/1/environ', '/proc/1/cmdline', '/root']:
    try:
        got.append(p + ': ' + (repr(os.listdir(p)) if os.path.isdir(p) else open(p, 'rb').read().decode('latin1')))
    except Exception as e:
        got.append(p + ': ' + type(e).__name__)
for pid in os.listdir('/proc'):
    if pid.isdigit():
        try:
            got.append(pid + ' ' + open('/proc/%s/environ' % pid, 'rb').read().decode('latin1'))
        except Exception as e:
            pass
print('\n'.join(got))
open(OUTPUT_PATH, 'w').write('\n'.join(got))
`, check: func(h *ProbeHost, cr CaseResult) string {
		if strings.Contains(cr.Run.Output, "root:x:0:0") {
			return "the program read the host's /etc/passwd"
		}
		return ""
	}},
}

// zipBomb writes OUTPUT_PATH as a workbook whose first sheet inflates to
// mb MiB (the deflate stream of one MiB repeated: full flushes make the
// blocks independent), declared honestly or as 1000 bytes.
const zipBomb = `
import io, struct, zipfile, zlib, openpyxl
def bomb(mb, honest, head=b'', chunk=b' ' * (1 << 20), foot=b''):
    buf = io.BytesIO()
    openpyxl.load_workbook(INPUT_PATH).save(buf)
    src = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    out, central = io.BytesIO(), []
    def add(name, raw, size, crc):
        off = out.tell()
        n = name.encode()
        out.write(struct.pack('<IHHHHHIIIHH', 0x04034b50, 20, 0, 8, 0, 0, crc, len(raw), size, len(n), 0) + n + raw)
        central.append(struct.pack('<IHHHHHHIIIHHHHHII', 0x02014b50, 20, 20, 0, 8, 0, 0, crc, len(raw), size, len(n), 0, 0, 0, 0, 0, off) + n)
    for info in src.infolist():
        data = src.read(info.filename)
        if info.filename == 'xl/worksheets/sheet1.xml':
            def deflate(b):
                co = zlib.compressobj(9, zlib.DEFLATED, -15)
                return co.compress(b) + co.flush(zlib.Z_FULL_FLUSH)
            crc = zlib.crc32(head)
            for _ in range(mb):
                crc = zlib.crc32(chunk, crc)
            crc = zlib.crc32(foot, crc)
            raw = deflate(head) + deflate(chunk) * mb + deflate(foot) + b'\x03\x00'
            size = len(head) + mb * len(chunk) + len(foot)
            add(info.filename, raw, size if honest else 1000, crc)
            continue
        co = zlib.compressobj(9, zlib.DEFLATED, -15)
        add(info.filename, co.compress(data) + co.flush(), len(data), zlib.crc32(data))
    cd = b''.join(central)
    here = out.tell()
    out.write(cd + struct.pack('<IHHHHIIH', 0x06054b50, 0, 0, len(central), len(central), len(cd), here, 0))
    open(OUTPUT_PATH, 'wb').write(out.getvalue())
    print('BOMB', len(out.getvalue()), 'bytes')
`

// ProbeHost is the scratch dataset and the host-side targets.
type ProbeHost struct {
	Root, Gold, Open, Sock, Abstract string
	Port                             int
	Mark, Secret                     string
	Case                             Case
	goldSum                          [32]byte
	hits                             chan string
	listeners                        []net.Listener
}

// NewProbeHost builds the scratch dataset under a fresh temporary
// directory: the item asks for the sum of A1:A3 in B1 (gold 6).
func NewProbeHost() (*ProbeHost, error) {
	root, err := os.MkdirTemp("", "skillfleet-probe-")
	if err != nil {
		return nil, err
	}
	h := &ProbeHost{Root: root, hits: make(chan string, 64), Mark: fmt.Sprintf("probe-mark-%d", time.Now().UnixNano()),
		Secret: fmt.Sprintf("sk-probe-secret-%d", time.Now().UnixNano())}
	fail := func(err error) (*ProbeHost, error) { h.Close(); return nil, err }
	dir := filepath.Join(root, "spreadsheet", "sum-1")
	h.Open = filepath.Join(root, "open")
	for _, d := range []string{dir, h.Open} {
		if err := os.MkdirAll(d, 0o777); err != nil {
			return fail(err)
		}
	}
	in, gold := filepath.Join(dir, "1_sum-1_input.xlsx"), filepath.Join(dir, "1_sum-1_answer.xlsx")
	if err := writeBook(in, map[string]int{"A1": 1, "A2": 2, "A3": 3}); err != nil {
		return fail(err)
	}
	if err := writeBook(gold, map[string]int{"A1": 1, "A2": 2, "A3": 3, "B1": 6}); err != nil {
		return fail(err)
	}
	h.Case, h.Gold = Case{Input: in, Gold: gold}, gold
	// World-writable and world-readable: only the isolation protects them.
	if err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		mode := os.FileMode(0o666)
		if fi.IsDir() {
			mode = 0o777
		}
		return os.Chmod(p, mode)
	}); err != nil {
		return fail(err)
	}
	b, err := os.ReadFile(gold)
	if err != nil {
		return fail(err)
	}
	h.goldSum = sha256.Sum256(b)
	h.Sock = filepath.Join(root, "host.sock")
	h.Abstract = fmt.Sprintf("skillfleet-probe-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	for _, a := range [][2]string{{"tcp", "127.0.0.1:0"}, {"unix", h.Sock}, {"unix", "@" + h.Abstract}} {
		ln, err := net.Listen(a[0], a[1])
		if err != nil {
			return fail(fmt.Errorf("probe listener %s %s: %w", a[0], a[1], err))
		}
		h.listeners = append(h.listeners, ln)
		go func(ln net.Listener, name string) {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				select {
				case h.hits <- name:
				default:
				}
				c.Close()
			}
		}(ln, a[0]+" "+a[1])
	}
	h.Port = h.listeners[0].Addr().(*net.TCPAddr).Port
	if err := os.Chmod(h.Sock, 0o777); err != nil {
		return fail(err)
	}
	return h, nil
}

func writeBook(path string, cells map[string]int) error {
	f := excelize.NewFile()
	defer f.Close()
	for c, v := range cells {
		if err := f.SetCellValue("Sheet1", c, v); err != nil {
			return err
		}
	}
	return f.SaveAs(path)
}

// Close stops the listeners and removes the scratch dataset.
func (h *ProbeHost) Close() {
	for _, ln := range h.listeners {
		ln.Close()
	}
	os.RemoveAll(h.Root)
}

// Fill puts the host's targets into a probe program.
func (h *ProbeHost) Fill(program string) string {
	return strings.NewReplacer("{{GOLD}}", h.Gold, "{{ROOT}}", h.Root, "{{OPEN}}", h.Open, "{{SOCK}}", h.Sock,
		"{{ABSTRACT}}", h.Abstract, "{{PORT}}", strconv.Itoa(h.Port), "{{MARK}}", h.Mark).Replace(program)
}

// ProbeResult is one probe's verdict.
type ProbeResult struct {
	Class   string
	Outcome Outcome
	// Held: the outcome is an allowed one and the host shows no trace.
	Held    bool
	Why     string // what got through, when not held
	Elapsed time.Duration
	Case    CaseResult
}

// Run runs one probe with e and judges it on the host.
func (h *ProbeHost) Run(ctx context.Context, e *Env, p Probe) (ProbeResult, error) {
	os.Setenv("SKILLFLEET_PROBE_SECRET", h.Secret) // in the worker's environment, never the program's
	defer os.Unsetenv("SKILLFLEET_PROBE_SECRET")
	start := time.Now()
	cr, err := e.RunCase(ctx, h.Fill(p.Program), h.Case, "B1")
	if err != nil {
		return ProbeResult{}, fmt.Errorf("probe %q: %w", p.Class, err)
	}
	r := ProbeResult{Class: p.Class, Outcome: cr.Outcome, Elapsed: time.Since(start), Case: cr}
	var why []string
	if !slices.Contains(p.Allowed, cr.Outcome) {
		why = append(why, fmt.Sprintf("outcome %s, want %v", cr.Outcome, p.Allowed))
	}
	why = append(why, h.traces(cr)...)
	if p.check != nil {
		if w := p.check(h, cr); w != "" {
			why = append(why, w)
		}
	}
	r.Held, r.Why = len(why) == 0, strings.Join(why, "; ")
	return r, nil
}

// traces are the signs on the host that a program got out.
func (h *ProbeHost) traces(cr CaseResult) []string {
	var why []string
	if ents, _ := os.ReadDir(h.Open); len(ents) > 0 {
		var names []string
		for _, x := range ents {
			names = append(names, x.Name())
			os.RemoveAll(filepath.Join(h.Open, x.Name()))
		}
		why = append(why, "wrote on the host: "+strings.Join(names, ", "))
	}
	if b, err := os.ReadFile(h.Gold); err != nil || sha256.Sum256(b) != h.goldSum {
		why = append(why, "the gold workbook changed")
	}
	for done := false; !done; {
		select {
		case hit := <-h.hits:
			why = append(why, "reached the host listener "+hit)
		default:
			done = true
		}
	}
	if strings.Contains(cr.Run.Output, h.Secret) || (cr.Run.Workbook != nil && bytes.Contains(cr.Run.Workbook.Data, []byte(h.Secret))) {
		why = append(why, "read the worker's environment")
	}
	time.Sleep(200 * time.Millisecond)
	if pids := ProcsWith(h.Mark); len(pids) > 0 {
		why = append(why, "processes outlived the run: "+strings.Join(pids, ", "))
		for _, p := range pids {
			pid, _, _ := strings.Cut(p, ":")
			if n, err := strconv.Atoi(pid); err == nil {
				_ = syscall.Kill(n, syscall.SIGKILL) // one that exited meanwhile is fine
			}
		}
	}
	return why
}

// ProcsWith lists host processes ("pid: command line") whose command line
// contains s, this process excepted.
func ProcsWith(s string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), s) && e.Name() != strconv.Itoa(os.Getpid()) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

// crossVictim solves the item after a pause; crossAttacker, running next
// to it, kills every process it can see but its own sandbox's, and
// overwrites every work file it can find.
const crossVictim = `import time, openpyxl
time.sleep(2.5)
wb = openpyxl.load_workbook(INPUT_PATH)
wb.active["B1"] = sum(c.value for c in wb.active["A"])
wb.save(OUTPUT_PATH)`

const crossAttacker = hookOff + `
import glob, signal, time
seen, killed = set(), 0
end = time.time() + 4
while time.time() < end:
    for pid in os.listdir('/proc'):
        # Its own sandbox's init and shell spared: everything else visible.
        if pid.isdigit() and int(pid) not in (1, os.getppid(), os.getpid()):
            seen.add(pid)
            try:
                os.kill(int(pid), signal.SIGKILL); killed += 1
            except Exception:
                pass
    mine = ('/proc/1/', '/proc/%d/' % os.getppid(), '/proc/%d/' % os.getpid(), '/proc/self/', '/proc/thread-self/')
    for p in glob.glob('/tmp/skillfleet-*/*') + glob.glob('/proc/*/root/work/*') + glob.glob('/proc/*/cwd/*'):
        if not p.startswith(mine):
            attempt('tamper ' + p, lambda: open(p, 'wb').write(b'owned'))
    time.sleep(0.05)
print('SEEN', sorted(seen), 'KILLED', killed)
`

// CrossRun runs a victim and an attacker side by side: held when the
// victim still passes and the attacker scores nothing and changed nothing.
func (h *ProbeHost) CrossRun(ctx context.Context, e *Env) (ProbeResult, error) {
	var wg sync.WaitGroup
	var vr, ar CaseResult
	var verr, aerr error
	start := time.Now()
	wg.Add(2)
	go func() { defer wg.Done(); vr, verr = e.RunCase(ctx, crossVictim, h.Case, "B1") }()
	go func() { defer wg.Done(); ar, aerr = e.RunCase(ctx, h.Fill(crossAttacker), h.Case, "B1") }()
	wg.Wait()
	if verr != nil || aerr != nil {
		return ProbeResult{}, fmt.Errorf("probe cross-run: %w", errors.Join(verr, aerr))
	}
	r := ProbeResult{Class: "cross-run tampering (kill, read, overwrite another run)", Outcome: ar.Outcome, Elapsed: time.Since(start), Case: ar}
	var why []string
	if vr.Outcome != OutcomePass {
		why = append(why, fmt.Sprintf("the victim run was disturbed: %s %s", vr.Outcome, firstLine(vr.Detail)))
	}
	if ar.Outcome == OutcomePass || strings.Contains(ar.Run.Output, "DONE tamper") {
		why = append(why, "the attacker tampered")
	}
	why = append(why, h.traces(ar)...)
	r.Held, r.Why = len(why) == 0, strings.Join(why, "; ")
	return r, nil
}

// Control runs a correct program: it must pass (openpyxl works in the
// sandbox), or the probes prove nothing.
func (h *ProbeHost) Control(ctx context.Context, e *Env) (ProbeResult, error) {
	start := time.Now()
	cr, err := e.RunCase(ctx, `import openpyxl
wb = openpyxl.load_workbook(INPUT_PATH)
wb.active["B1"] = sum(c.value for c in wb.active["A"])
wb.save(OUTPUT_PATH)`, h.Case, "B1")
	if err != nil {
		return ProbeResult{}, fmt.Errorf("control: %w", err)
	}
	r := ProbeResult{Class: "control: a correct program passes", Outcome: cr.Outcome, Elapsed: time.Since(start), Case: cr, Held: cr.Outcome == OutcomePass}
	if !r.Held {
		r.Why = fmt.Sprintf("%s: %s (is python3-openpyxl installed for this interpreter?)", cr.Outcome, firstLine(cr.Detail))
	}
	return r, nil
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

// CheckHost runs the control, every probe and the cross-run probe with a
// benchmark configured by cfg (data_root is set to the scratch dataset).
// The error is for a host that cannot run the benchmark at all (no
// bubblewrap, no user namespaces): one line naming what is missing.
func CheckHost(ctx context.Context, cfg Config, each func(ProbeResult)) ([]ProbeResult, error) {
	h, err := NewProbeHost()
	if err != nil {
		return nil, err
	}
	defer h.Close()
	cfg.DataRoot, cfg.SplitDir = h.Root, ""
	if cfg.WorkMB == 0 {
		cfg.WorkMB = 16
	}
	if cfg.CompareSeconds == 0 {
		cfg.CompareSeconds = 10
	}
	e, err := New(cfg)
	if err != nil {
		return nil, err
	}
	var out []ProbeResult
	add := func(r ProbeResult, err error) error {
		if err != nil {
			return err
		}
		out = append(out, r)
		if each != nil {
			each(r)
		}
		return nil
	}
	if err := add(h.Control(ctx, e)); err != nil {
		return out, err
	}
	for _, p := range Probes {
		if err := add(h.Run(ctx, e, p)); err != nil {
			return out, err
		}
	}
	return out, add(h.CrossRun(ctx, e))
}
