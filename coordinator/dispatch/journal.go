package dispatch

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"

	"google.golang.org/protobuf/proto"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Journal is the coordinator's append-only record of task results. A result
// is acknowledged to its worker only after the journal has written (and,
// unless NoSync, fsynced) it. Appends are group-committed: one write and
// one fsync serve every result that arrived while the previous one ran.
//
// Record format: 4-byte big-endian length, 4-byte CRC-32C of the data, then
// the protobuf-encoded Result. A torn tail (crash mid-write) is truncated
// on open.
//
// The journal is also where a coordinator keeps its results: it holds only
// each result's [Ref] in memory and reads the result back when it is
// asked for (ReadAt), so a run's memory does not grow with the size of
// its trajectories.
//
// Opening a journal starts nothing: [Journal.Run] writes the appends (on
// the caller's goroutine) until the journal is closed or Run's context
// ends. Appends made before Run starts wait for it; appends after it has
// ended fail at once.
type Journal struct {
	path string
	f    *os.File
	sync bool

	// size is the length of the journal's good records (loop only).
	size int64

	mu     sync.Mutex
	queue  []journalEntry
	wake   chan struct{}
	closed bool
	// running is set once Run starts, ended once it has returned (the
	// journal then takes no append); done closes when Run returns.
	running, ended bool
	done           chan struct{}
	// recovered are the records found at open, in order.
	recovered []Ref

	// failed is the first write (or read-back) error. The journal is then cut back to
	// its last good record and refuses every append at once: a full disk
	// fails the results it cannot hold instead of retrying them forever,
	// and the file stays readable for a resume once space is back.
	failed error
}

type journalEntry struct {
	data []byte
	id   string
	cb   func(Ref, error)
}

// Ref locates one result in the journal: its task id and where its
// encoding starts and how long it is.
type Ref struct {
	TaskID string
	Off    int64
	Size   uint32
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// OpenJournal opens (creating if needed) the journal at path and returns it
// with every result recorded so far, in order. It holds every result in
// memory at once: readers of a whole journal use it, a coordinator uses
// [OpenJournalIndex].
func OpenJournal(path string, noSync bool) (*Journal, []*pb.Result, error) {
	var out []*pb.Result
	j, err := openJournal(path, noSync, func(res *pb.Result) { out = append(out, res) })
	if err != nil {
		return nil, nil, err
	}
	return j, out, nil
}

// OpenJournalIndex opens (creating if needed) the journal at path. The
// results recorded so far stay on disk; [Journal.Recovered] locates them.
func OpenJournalIndex(path string, noSync bool) (*Journal, error) {
	return openJournal(path, noSync, nil)
}

func openJournal(path string, noSync bool, each func(*pb.Result)) (*Journal, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	refs, good := readJournal(f, each)
	if err := f.Truncate(good); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("truncate journal: %w", err)
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("seek journal: %w", err)
	}
	return &Journal{path: path, f: f, sync: !noSync, size: good, recovered: refs, wake: make(chan struct{}, 1), done: make(chan struct{})}, nil
}

// Recovered locates the results the journal held when it was opened, in
// order. The journal forgets them once a dispatcher has taken them over
// (see [New]).
func (j *Journal) Recovered() []Ref {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.recovered
}

// takeRecovered returns Recovered and forgets it.
func (j *Journal) takeRecovered() []Ref {
	j.mu.Lock()
	defer j.mu.Unlock()
	r := j.recovered
	j.recovered = nil
	return r
}

// readJournal reads the good records from the start, handing each result
// to each (if set); it stops at the first torn or corrupt one and returns
// where the records of task results are (a cancelled attempt's report is
// left out) and the length the good records span.
func readJournal(f *os.File, each func(*pb.Result)) ([]Ref, int64) {
	r := bufio.NewReaderSize(f, 1<<20)
	var (
		out  []Ref
		good int64
		hdr  [8]byte
	)
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return out, good // clean end or torn header
		}
		n := binary.BigEndian.Uint32(hdr[:4])
		sum := binary.BigEndian.Uint32(hdr[4:])
		if n > maxRecord {
			return out, good
		}
		data := make([]byte, n)
		if _, err := io.ReadFull(r, data); err != nil {
			return out, good
		}
		if crc32.Checksum(data, castagnoli) != sum {
			return out, good
		}
		res := &pb.Result{}
		if err := proto.Unmarshal(data, res); err != nil {
			return out, good
		}
		if each != nil {
			each(res)
		}
		// A cancelled attempt's report is no task's result (see
		// Dispatcher.recordCancelled); journals written before that rule
		// may hold some, which a resumed run must not take as answers.
		if res.GetOutcome() != pb.Outcome_OUTCOME_CANCELLED {
			out = append(out, Ref{TaskID: res.GetTaskId(), Off: good + 8, Size: n})
		}
		good += int64(8 + n)
	}
}

// maxRecord is the longest record the journal reads back; writeBuffer
// the write buffer a journal keeps for its whole life (a record longer
// than it is written directly).
const (
	maxRecord   = 256 << 20
	writeBuffer = 64 << 10
)

// ReadAt reads back the result ref locates. A failed read fails the
// journal as a failed write does: the run cannot go on without its
// results.
func (j *Journal) ReadAt(ref Ref) (*pb.Result, error) {
	data := make([]byte, ref.Size)
	_, err := j.f.ReadAt(data, ref.Off)
	res := &pb.Result{}
	if err == nil {
		err = proto.Unmarshal(data, res)
	}
	if err == nil && res.GetTaskId() != ref.TaskID {
		err = fmt.Errorf("found task %q", res.GetTaskId())
	}
	if err != nil {
		err = fmt.Errorf("read back the result of task %s at offset %d of journal %s: %w", ref.TaskID, ref.Off, j.path, err)
		j.mu.Lock()
		if j.failed == nil {
			j.failed = err
		}
		j.mu.Unlock()
		return nil, err
	}
	return res, nil
}

// Append queues res; cb is called once it is durable (or failed).
func (j *Journal) Append(res *pb.Result, cb func(error)) {
	j.append(res, func(_ Ref, err error) { cb(err) })
}

// append queues res; cb is called once it is durable, with where it is,
// or failed.
func (j *Journal) append(res *pb.Result, cb func(Ref, error)) {
	data, err := proto.Marshal(res)
	if err == nil && len(data) > maxRecord {
		err = fmt.Errorf("%d bytes, more than the journal's %d", len(data), maxRecord)
	}
	if err != nil {
		cb(Ref{}, fmt.Errorf("encode result: %w", err))
		return
	}
	j.mu.Lock()
	if j.closed || j.ended {
		j.mu.Unlock()
		cb(Ref{}, fmt.Errorf("journal %s closed", j.path))
		return
	}
	if j.failed != nil {
		err := j.failed
		j.mu.Unlock()
		cb(Ref{}, err)
		return
	}
	j.queue = append(j.queue, journalEntry{data: data, cb: cb, id: res.GetTaskId()})
	select {
	case j.wake <- struct{}{}:
	default:
	}
	j.mu.Unlock()
}

// Run writes the appends, group-committed, until the journal is closed or
// ctx ends; either way it first writes every append queued so far, and
// the journal takes no append after. It returns nil, or an error when the
// journal is already running or closed.
func (j *Journal) Run(ctx context.Context) error {
	j.mu.Lock()
	if j.running || j.closed {
		j.mu.Unlock()
		return fmt.Errorf("journal %s: already running or closed", j.path)
	}
	j.running = true
	j.mu.Unlock()
	defer close(j.done)
	j.loop(ctx)
	return nil
}

func (j *Journal) loop(ctx context.Context) {
	w := bufio.NewWriterSize(j.f, writeBuffer)
	var hdr [8]byte
	for {
		stopping := false
		select {
		case <-j.wake:
		case <-ctx.Done():
			stopping = true
		}
		for {
			j.mu.Lock()
			batch := j.queue
			j.queue = nil
			last := j.closed || stopping
			if len(batch) == 0 && last {
				// Under the lock: no append slips in between
				// the last batch and the end.
				j.ended = true
			}
			j.mu.Unlock()
			if len(batch) == 0 {
				if last {
					return
				}
				break
			}
			err := j.failedErr()
			var n int64
			for _, e := range batch {
				if err != nil {
					break
				}
				binary.BigEndian.PutUint32(hdr[:4], uint32(len(e.data)))
				binary.BigEndian.PutUint32(hdr[4:], crc32.Checksum(e.data, castagnoli))
				if _, err = w.Write(hdr[:]); err != nil {
					break
				}
				if _, err = w.Write(e.data); err != nil {
					break
				}
				n += int64(8 + len(e.data))
			}
			if err == nil {
				err = w.Flush()
			}
			if err == nil && j.sync {
				err = j.f.Sync()
			}
			if err == nil {
				j.size += n
			} else {
				err = j.fail(err, w)
			}
			off := j.size - n
			for _, e := range batch {
				if err != nil {
					e.cb(Ref{}, err)
					continue
				}
				e.cb(Ref{TaskID: e.id, Off: off + 8, Size: uint32(len(e.data))}, nil)
				off += int64(8 + len(e.data))
			}
		}
	}
}

func (j *Journal) failedErr() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.failed
}

// fail records the first write error and cuts the file back to its last
// good record, so that a partly written batch cannot hide the records a
// resume appends after it. It returns the error to give the batch.
func (j *Journal) fail(err error, w *bufio.Writer) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.failed != nil {
		return j.failed
	}
	w.Reset(j.f)
	j.failed = fmt.Errorf("write journal %s: %w", j.path, err)
	if terr := j.f.Truncate(j.size); terr == nil {
		_, _ = j.f.Seek(j.size, io.SeekStart)
	}
	return j.failed
}

// Err returns the write error that failed the journal, or nil.
func (j *Journal) Err() error { return j.failedErr() }

// Close ends Run once the appends queued so far are written, waits for
// it, and closes the file. Appends queued on a journal that never ran
// fail.
func (j *Journal) Close() error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return nil
	}
	j.closed = true
	running := j.running
	var orphans []journalEntry
	if !running {
		orphans, j.queue = j.queue, nil
	}
	select {
	case j.wake <- struct{}{}:
	default:
	}
	j.mu.Unlock()
	if running {
		<-j.done
	}
	for _, e := range orphans {
		e.cb(Ref{}, fmt.Errorf("journal %s closed before it ran", j.path))
	}
	return j.f.Close()
}
