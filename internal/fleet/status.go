package fleet

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/coordinator/rpcserver"
	"github.com/skillfleet/skillfleet/internal/ui"
	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/store"
	"github.com/skillfleet/skillfleet/pkg/store/redisstore"
)

// BucketLevels reads the rate buckets shared in Redis (redisstore's
// Limiter), which the workers cannot tell the levels of.
type BucketLevels interface {
	Level(ctx context.Context, key string, ratePerMin, burst int64) (float64, error)
}

// RedisLevels is st's shared buckets, or nil without a shared store.
func RedisLevels(st *redisstore.Store) BucketLevels {
	if st == nil {
		return nil
	}
	return st.Limiter()
}

// Status reports the hub's workers, queues and the shared registry
// (reg may be nil), as /status does, and the levels of the rate buckets
// shared in Redis (levels may be nil).
func Status(hub *coordinator.Hub, reg store.Registry, levels BucketLevels) func(context.Context) (*ui.Fleet, error) {
	return func(ctx context.Context) (*ui.Fleet, error) {
		if hub == nil {
			return nil, errors.New("no coordinator in this process")
		}
		f := &ui.Fleet{Pending: hub.D.Pending(), Recorded: hub.D.Recorded(), Workers: []ui.FleetWorker{}}
		for _, w := range hub.RPC.Workers(30 * time.Second) {
			f.Workers = append(f.Workers, ui.FleetWorker{ID: w.ID, Host: w.Hostname, Concurrency: w.Concurrency, InFlight: w.InFlight, Completed: w.Completed, LastSeen: w.LastSeen})
		}
		if hub.Stream != nil {
			for _, c := range queue.Classes {
				q := ui.QueueDepth{Class: string(c)}
				cons, err := hub.Stream.Consumer(ctx, c.Consumer())
				if err == nil {
					info, ierr := cons.Info(ctx)
					if ierr == nil {
						q.Waiting, q.InDelivery = info.NumPending, info.NumAckPending
					}
					err = ierr
				}
				if err != nil {
					q.Error = err.Error()
				}
				f.Queues = append(f.Queues, q)
			}
		}
		if reg != nil {
			list, err := reg.List(ctx)
			if err != nil {
				f.RegistryError = err.Error()
			} else {
				f.Registry = list
			}
		}
		f.Limits = headrooms(hub.RPC.Workers(30 * time.Second))
		if note := sharedLevels(ctx, f.Limits, levels); note != "" {
			f.Notes = append(f.Notes, note)
		}
		if len(f.Limits) == 0 {
			f.Notes = append(f.Notes, "no worker has reported a rate limit: none is configured (model.*_options rpm, tpm, max_concurrency), or no call has been made yet")
		}
		return f, nil
	}
}

// headrooms lists the workers' rate limiters, by worker then endpoint.
func headrooms(workers []rpcserver.WorkerInfo) []ui.Headroom {
	sort.Slice(workers, func(i, j int) bool { return workers[i].ID < workers[j].ID })
	var out []ui.Headroom
	for _, w := range workers {
		for _, l := range w.Limits {
			if l.GetRequestsPerMin() == 0 && l.GetTokensPerMin() == 0 && l.GetMaxConcurrency() == 0 {
				continue // an endpoint called without limits
			}
			h := ui.Headroom{Worker: w.ID, Backend: l.GetBackend(), Endpoint: l.GetEndpoint(), Model: l.GetModel(),
				RPM: l.GetRequestsPerMin(), TPM: l.GetTokensPerMin(), MaxConcurrency: int(l.GetMaxConcurrency()), Cap: int(l.GetConcurrencyCap()),
				InFlight: int(l.GetInFlight()), Waiting: int(l.GetWaiting()), Shared: l.GetShared()}
			if !h.Shared {
				rl, tl := l.GetRequestsLeft(), l.GetTokensLeft()
				h.RequestsLeft, h.TokensLeft = &rl, &tl
			}
			out = append(out, h)
		}
	}
	return out
}

// sharedLevels fills in the levels of the limits whose buckets are shared
// in Redis, reading each bucket once however many workers draw from it.
// The bucket keys are the workers' (backends.Limiter: backend|endpoint|
// model|rpm or |tpm), with the endpoint as the worker reported it; an
// endpoint shown without its credentials or query (see shownEndpoint)
// names no bucket, and its levels stay unknown. It returns a note when the
// store cannot be read.
func sharedLevels(ctx context.Context, limits []ui.Headroom, levels BucketLevels) string {
	if levels == nil {
		return ""
	}
	read := map[string]*float64{}
	var firstErr error
	level := func(key string, perMin int64) *float64 {
		if perMin <= 0 {
			return nil
		}
		if v, ok := read[key]; ok {
			return v
		}
		var out *float64
		if v, err := levels.Level(ctx, key, perMin, perMin); err == nil {
			out = &v
		} else if firstErr == nil {
			firstErr = err
		}
		read[key] = out
		return out
	}
	for i := range limits {
		h := &limits[i]
		if !h.Shared || strings.HasSuffix(h.Endpoint, endpointTrimmed) || h.Endpoint == endpointHidden {
			continue
		}
		key := backends.LimitKey{Backend: h.Backend, Endpoint: h.Endpoint, Model: h.Model}.String()
		h.RequestsLeft, h.TokensLeft = level(key+"|rpm", h.RPM), level(key+"|tpm", h.TPM)
		if h.RPM > 0 && h.RequestsLeft == nil || h.TPM > 0 && h.TokensLeft == nil {
			// Either both levels or none, as for a worker's own buckets.
			h.RequestsLeft, h.TokensLeft = nil, nil
		}
	}
	if firstErr != nil {
		return "the rate buckets shared in Redis could not be read: " + firstErr.Error()
	}
	return ""
}
