package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/pkg/queue"
)

// BucketPrefix starts the name of the key-value bucket that holds a
// shared campaign's state; the campaign's name follows.
const BucketPrefix = "skillfleet_campaign_"

// Keys of a campaign's bucket.
const (
	cellKeyPrefix   = "cell."
	skillKeyPrefix  = "skill."
	memberKeyPrefix = "member."
	startedKey      = "meta.started"
)

// kvStore is a campaign's state in a NATS JetStream key-value bucket: one
// key per cell, written with the revision last read (compare-and-set).
type kvStore struct {
	kv jetstream.KeyValue
}

// BucketName is the key-value bucket of the campaign named name.
func BucketName(name string) string {
	return BucketPrefix + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, name)
}

// NewKVStore opens (creating it if needed) the bucket of the campaign
// named name: the state every process serving that campaign shares.
// replicas is the bucket's replication on a clustered NATS (0 or 1: one
// copy). A cluster that has no JetStream meta leader yet (its servers
// starting together) or is electing one is waited for, as long as ctx
// allows and at most [queue.FailoverFor].
func NewKVStore(ctx context.Context, js jetstream.JetStream, name string, replicas int) (Store, error) {
	cfg := jetstream.KeyValueConfig{
		Bucket:      BucketName(name),
		Description: "skillfleet: the cells of campaign " + name + ", who runs them, their results",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    max(replicas, 1),
	}
	kv, err := queue.Place(ctx, func(ctx context.Context) (jetstream.KeyValue, error) {
		return js.CreateOrUpdateKeyValue(ctx, cfg)
	})
	if err != nil {
		return nil, fmt.Errorf("campaign state bucket %s: %w", BucketName(name), err)
	}
	return &kvStore{kv: kv}, nil
}

func (s *kvStore) Seed(ctx context.Context, st CellStatus) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if _, err := s.kv.Create(ctx, cellKeyPrefix+st.Name, b); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return err
	}
	return nil
}

func (s *kvStore) Put(ctx context.Context, st CellStatus, rev uint64) (uint64, error) {
	b, err := json.Marshal(st)
	if err != nil {
		return 0, err
	}
	n, err := s.kv.Update(ctx, cellKeyPrefix+st.Name, b, rev)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
		return 0, ErrConflict
	}
	return n, err
}

func record(e jetstream.KeyValueEntry) (Record, bool) {
	if e == nil || e.Operation() != jetstream.KeyValuePut || !strings.HasPrefix(e.Key(), cellKeyPrefix) {
		return Record{}, false
	}
	var st CellStatus
	if json.Unmarshal(e.Value(), &st) != nil {
		return Record{}, false
	}
	return Record{CellStatus: st, Rev: e.Revision()}, true
}

func (s *kvStore) List(ctx context.Context) ([]Record, error) {
	keys, err := s.kv.ListKeysFiltered(ctx, cellKeyPrefix+">")
	if err != nil {
		return nil, err
	}
	var names []string
	for k := range keys.Keys() {
		names = append(names, k)
	}
	var out []Record
	for _, k := range names {
		e, err := s.kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if r, ok := record(e); ok {
			out = append(out, r)
		}
	}
	return out, nil
}

func (s *kvStore) Beat(ctx context.Context, b Beat) error {
	v, err := json.Marshal(b)
	if err != nil {
		return err
	}
	_, err = s.kv.Put(ctx, memberKeyPrefix+b.Member, v)
	return err
}

func beatOf(e jetstream.KeyValueEntry) (Beat, bool) {
	var b Beat
	if e == nil || e.Operation() != jetstream.KeyValuePut || !strings.HasPrefix(e.Key(), memberKeyPrefix) || json.Unmarshal(e.Value(), &b) != nil {
		return Beat{}, false
	}
	return b, true
}

func (s *kvStore) Watch(ctx context.Context, rec func(Record), beat func(Beat)) error {
	w, err := s.kv.WatchFiltered(ctx, []string{cellKeyPrefix + ">", memberKeyPrefix + ">"}, jetstream.UpdatesOnly())
	if err != nil {
		return err
	}
	go func() {
		defer func() { _ = w.Stop() }()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if r, ok := record(e); ok {
					rec(r)
				} else if b, ok := beatOf(e); ok {
					beat(b)
				}
			}
		}
	}()
	return nil
}

func (s *kvStore) Started(ctx context.Context, now time.Time) (time.Time, error) {
	v := []byte(now.UTC().Format(time.RFC3339Nano))
	if _, err := s.kv.Create(ctx, startedKey, v); err != nil {
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return time.Time{}, err
		}
		e, err := s.kv.Get(ctx, startedKey)
		if err != nil {
			return time.Time{}, err
		}
		v = e.Value()
	}
	return time.Parse(time.RFC3339Nano, string(v))
}

func (s *kvStore) PutSkill(ctx context.Context, cell string, text []byte) error {
	_, err := s.kv.Put(ctx, skillKeyPrefix+cell, text)
	return err
}

func (s *kvStore) Skill(ctx context.Context, cell string) ([]byte, error) {
	e, err := s.kv.Get(ctx, skillKeyPrefix+cell)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, ErrNoSkill
	}
	if err != nil {
		return nil, err
	}
	return e.Value(), nil
}
