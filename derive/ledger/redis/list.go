package redis

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/idemkey/idemkey/derive/ledger"
)

// List implements ledger.Store: every primary's records, found by SCAN
// (no index that every write would touch), read in pipelines of a page
// (without their outputs), on the primary that holds them and with its
// clock; ordered by start.
func (s *Store) List(ctx context.Context, f ledger.Filter) ([]*ledger.Record, error) {
	var mu sync.Mutex
	var out []*ledger.Record
	var moved []string
	each := func(ctx context.Context, node *redis.Client) error {
		recs, gone, err := s.listNode(ctx, node, f)
		mu.Lock()
		out = append(out, recs...)
		moved = append(moved, gone...)
		mu.Unlock()
		return err
	}
	var err error
	if s.cluster != nil {
		_, err = s.do(ctx, func() error {
			mu.Lock()
			out, moved = out[:0], moved[:0]
			mu.Unlock()
			return s.cluster.ForEachMaster(ctx, each)
		})
	} else {
		_, err = s.do(ctx, func() error {
			out, moved = out[:0], moved[:0]
			return each(ctx, s.single)
		})
	}
	if err != nil {
		return nil, err
	}
	// A record whose slot moved between the scan and the read (a
	// resharding): read where it is now.
	for _, k := range moved {
		rec, expired, err := s.Get(ctx, k)
		if err != nil {
			return nil, err
		}
		if rec == nil || !match(rec, f) {
			continue
		}
		rec.Request, rec.Stdout.Data, rec.Stderr.Data, rec.Meta = nil, nil, nil, nil
		if expired {
			rec.LeaseUntil = rec.ReadAt
		}
		out = append(out, rec)
	}
	slices.SortFunc(out, func(a, b *ledger.Record) int {
		return cmp.Or(a.StartedAt.Compare(b.StartedAt), cmp.Compare(a.Key, b.Key))
	})
	return out, nil
}

func match(rec *ledger.Record, f ledger.Filter) bool {
	return (f.Task == "" || rec.Task == f.Task) && (f.Tool == "" || rec.Tool == f.Tool) && (f.State == "" || rec.State == f.State)
}

// listNode lists one node's records, and the keys whose slot moved away
// before they were read.
func (s *Store) listNode(ctx context.Context, node *redis.Client, f ledger.Filter) (out []*ledger.Record, moved []string, err error) {
	const page = 500
	var cursor uint64
	for {
		var names []string
		names, cursor, err = node.Scan(ctx, cursor, s.recordPattern(), page).Result()
		if err != nil {
			return nil, nil, err
		}
		if len(names) > 0 {
			recs, gone, err := s.readPage(ctx, node, names, f)
			if err != nil {
				return nil, nil, err
			}
			out, moved = append(out, recs...), append(moved, gone...)
		}
		if cursor == 0 {
			return out, moved, nil
		}
	}
}

// readPage reads the records of names on node in one pipeline.
func (s *Store) readPage(ctx context.Context, node *redis.Client, names []string, f ledger.Filter) (out []*ledger.Record, moved []string, err error) {
	var cmds []*redis.SliceCmd
	var pttls []*redis.DurationCmd
	keys := make([]string, 0, len(names))
	pipe := node.Pipeline()
	for _, name := range names {
		k, ok := s.keyOf(name)
		if !ok {
			continue
		}
		keys = append(keys, k)
		cmds = append(cmds, pipe.HMGet(ctx, name, listFields...))
		pttls = append(pttls, pipe.PTTL(ctx, s.leaseKey(k)))
	}
	now := pipe.Time(ctx)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) && now.Err() != nil {
		return nil, nil, err
	}
	for i, c := range cmds {
		if err := c.Err(); err != nil {
			if retry, _ := transient(err); retry {
				moved = append(moved, keys[i])
				continue
			}
			return nil, nil, err
		}
		v := c.Val()
		if len(v) != len(listFields) || v[0] == nil {
			continue // removed or expired since the scan
		}
		fields := map[string]string{}
		for j, name := range listFields {
			if str, ok := v[j].(string); ok {
				fields[name] = str
			}
		}
		rec, err := s.decode(fields)
		if err != nil {
			return nil, nil, err
		}
		rec.Request, rec.Stdout.Data, rec.Stderr.Data, rec.Meta = nil, nil, nil, nil
		rec.ReadAt = now.Val()
		if d := pttls[i].Val(); rec.State == ledger.Running && d >= 0 {
			rec.LeaseUntil = rec.ReadAt.Add(d)
		} else if rec.State == ledger.Running {
			rec.LeaseUntil = rec.ReadAt // the lease key is gone: expired
		}
		if match(rec, f) {
			out = append(out, rec)
		}
	}
	return out, moved, nil
}

// listFields are the hash fields List reads: all but the outputs' and
// request's bytes.
var listFields = []string{"state", "attempt", "rec", "task", "tool", "holder", "reason", "token", "stored"}
