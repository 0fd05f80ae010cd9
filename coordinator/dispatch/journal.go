package dispatch

import (
	"bufio"
	"encoding/binary"
	"errors"
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
type Journal struct {
	path string
	f    *os.File
	sync bool

	mu      sync.Mutex
	queue   []journalEntry
	wake    chan struct{}
	closed  bool
	done    chan struct{}
	lastErr error
}

type journalEntry struct {
	data []byte
	cb   func(error)
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// OpenJournal opens (creating if needed) the journal at path and returns it
// with every result recorded so far, in order.
func OpenJournal(path string, noSync bool) (*Journal, []*pb.Result, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("open journal: %w", err)
	}
	results, good, err := readJournal(f)
	if err != nil {
		_ = f.Close()
		return nil, nil, fmt.Errorf("read journal %s: %w", path, err)
	}
	if err := f.Truncate(good); err != nil {
		_ = f.Close()
		return nil, nil, fmt.Errorf("truncate journal: %w", err)
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		_ = f.Close()
		return nil, nil, fmt.Errorf("seek journal: %w", err)
	}
	j := &Journal{path: path, f: f, sync: !noSync, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go j.loop()
	return j, results, nil
}

func readJournal(f *os.File) ([]*pb.Result, int64, error) {
	r := bufio.NewReaderSize(f, 1<<20)
	var (
		out  []*pb.Result
		good int64
		hdr  [8]byte
	)
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return out, good, nil // clean end or torn header
		}
		n := binary.BigEndian.Uint32(hdr[:4])
		sum := binary.BigEndian.Uint32(hdr[4:])
		if n > 256<<20 {
			return out, good, nil
		}
		data := make([]byte, n)
		if _, err := io.ReadFull(r, data); err != nil {
			return out, good, nil
		}
		if crc32.Checksum(data, castagnoli) != sum {
			return out, good, nil
		}
		res := &pb.Result{}
		if err := proto.Unmarshal(data, res); err != nil {
			return out, good, nil
		}
		out = append(out, res)
		good += int64(8 + n)
	}
}

// Append queues res; cb is called once it is durable (or failed).
func (j *Journal) Append(res *pb.Result, cb func(error)) {
	data, err := proto.Marshal(res)
	if err != nil {
		cb(fmt.Errorf("encode result: %w", err))
		return
	}
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		cb(errors.New("journal closed"))
		return
	}
	j.queue = append(j.queue, journalEntry{data: data, cb: cb})
	select {
	case j.wake <- struct{}{}:
	default:
	}
	j.mu.Unlock()
}

func (j *Journal) loop() {
	defer close(j.done)
	w := bufio.NewWriterSize(j.f, 1<<20)
	var hdr [8]byte
	for range j.wake {
		for {
			j.mu.Lock()
			batch := j.queue
			j.queue = nil
			closed := j.closed
			j.mu.Unlock()
			if len(batch) == 0 {
				if closed {
					return
				}
				break
			}
			var err error
			for _, e := range batch {
				binary.BigEndian.PutUint32(hdr[:4], uint32(len(e.data)))
				binary.BigEndian.PutUint32(hdr[4:], crc32.Checksum(e.data, castagnoli))
				if _, err = w.Write(hdr[:]); err != nil {
					break
				}
				if _, err = w.Write(e.data); err != nil {
					break
				}
			}
			if err == nil {
				err = w.Flush()
			}
			if err == nil && j.sync {
				err = j.f.Sync()
			}
			if err != nil {
				err = fmt.Errorf("write journal %s: %w", j.path, err)
				w.Reset(j.f)
			}
			for _, e := range batch {
				e.cb(err)
			}
		}
	}
}

// Close flushes queued appends and closes the file.
func (j *Journal) Close() error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return nil
	}
	j.closed = true
	select {
	case j.wake <- struct{}{}:
	default:
	}
	close(j.wake)
	j.mu.Unlock()
	<-j.done
	return j.f.Close()
}
