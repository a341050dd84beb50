package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/idemkey/idemkey/derive/ledger/internal/storeutil"
)

// Claims acknowledged by replicas. Redis replicates asynchronously: a
// claim the primary acknowledged can vanish when a replica is promoted,
// and the step would run a second time. So after a claim or a takeover
// the store sends WAIT on the connection that wrote it, and when fewer
// replicas than wanted acknowledge it within replica_timeout, it
// withdraws the claim (fenced by its token: the record it took over comes
// back, or a fresh key's record goes) and returns ledger.ErrNotDurable:
// the step is not started.
//
// Completions, renewals and resolutions do not wait. A completion lost in
// a failover leaves the attempt's claim, which was durable, with a lease
// that runs out: the next claim reads it as unknown, which is what it is,
// never as a fresh key (no rerun) and never as succeeded. A lost renewal
// only brings that sooner; the holder learns it at its next renewal.

// claimWait is one write's wait for its replicas.
type claimWait struct {
	s        *Store
	key      string
	takeover bool
	want     int           // replicas to wait for; 0: no wait
	node     *redis.Client // the key's primary
	conn     *redis.Conn   // the connection of the last try
}

// claim prepares the write of rec: a running rec (a claim or takeover)
// waits for the replicas wanted, on a connection of its own.
func (s *Store) claim(ctx context.Context, rec *ledger.Record, takeover bool) *claimWait {
	cw := &claimWait{s: s, key: rec.Key, takeover: takeover}
	if rec.State != ledger.Running || s.replicas == 0 {
		return cw
	}
	node := s.single
	if s.cluster != nil {
		n, err := s.cluster.MasterForKey(ctx, s.RecordKey(rec.Key))
		if err != nil {
			// Unknown for now: wait for one; on() looks again.
			cw.want = max(s.replicas, 1)
			return cw
		}
		node = n
	}
	cw.node = node
	cw.want = s.replicas
	if cw.want < 0 {
		cw.want = min(s.connectedReplicas(ctx, node), 1)
	}
	return cw
}

// connectedReplicas is how many replicas node reports connected, read
// once per primary.
func (s *Store) connectedReplicas(ctx context.Context, node *redis.Client) int {
	addr := ""
	if s.cluster != nil {
		addr = node.Options().Addr
	}
	s.autoMu.Lock()
	n, ok := s.auto[addr]
	s.autoMu.Unlock()
	if ok {
		return n
	}
	info, err := node.Info(ctx, "replication").Result()
	if err != nil {
		return 1 // cannot tell: wait for one, and say so if none answers
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_slaves:"); ok {
			n, _ = strconv.Atoi(v)
		}
	}
	s.autoMu.Lock()
	s.auto[addr] = n
	s.autoMu.Unlock()
	return n
}

// keepArg is the scripts' keep ms: how long a taken-over record is kept
// for a withdrawal ("0": not kept, no wait).
func (cw *claimWait) keepArg() string {
	if cw.want == 0 {
		return "0"
	}
	return strconv.FormatInt((2*cw.s.replicaTimeout + time.Minute).Milliseconds(), 10)
}

// on is where a try runs its script: the store's client, or, to wait,
// a connection of the key's primary held for the WAIT after it.
func (cw *claimWait) on(ctx context.Context) redis.Scripter {
	if cw.want == 0 {
		return cw.s.c
	}
	cw.close()
	if cw.s.cluster != nil {
		// Looked up for every try: a failover or a moved slot changes it.
		if n, err := cw.s.cluster.MasterForKey(ctx, cw.s.RecordKey(cw.key)); err == nil {
			cw.node = n
		}
	}
	if cw.node == nil {
		return cw.s.c
	}
	cw.conn = cw.node.Conn()
	return cw.conn
}

func (cw *claimWait) close() {
	if cw.conn != nil {
		cw.conn.Close()
		cw.conn = nil
	}
}

// confirmed is confirm as a write's result: made (and durable), or not.
func (cw *claimWait) confirmed(ctx context.Context, rec *ledger.Record, wrote bool) (bool, error) {
	if err := cw.confirm(ctx, rec, wrote); err != nil {
		return false, err
	}
	return true, nil
}

// confirm waits until the replicas wanted acknowledge the claim of rec
// that this connection wrote (wrote false: an earlier try on another
// connection may have written it, and no WAIT can tell), or withdraws it
// and returns an error wrapping ledger.ErrNotDurable.
func (cw *claimWait) confirm(ctx context.Context, rec *ledger.Record, wrote bool) error {
	if cw.want == 0 {
		return nil
	}
	why := "the connection that wrote it broke"
	if wrote && cw.conn != nil {
		n, err := cw.conn.Do(ctx, "WAIT", cw.want, cw.s.replicaTimeout.Milliseconds()).Int()
		if err == nil {
			if n >= cw.want {
				return nil
			}
			why = fmt.Sprintf("%d of %d replica(s) acknowledged it within %v", n, cw.want, cw.s.replicaTimeout)
		} else {
			why = "WAIT failed: " + cw.s.redactErr(err).Error()
		}
	}
	cw.close()
	took := "0"
	if cw.takeover {
		took = "1"
	}
	var res int64
	_, err := cw.s.do(ctx, func() error {
		var err error
		res, err = scripts().withdraw.Run(ctx, cw.s.c, cw.s.keys(cw.key), rec.Token, took, markKeep.Milliseconds()).Int64()
		return err
	})
	withdrawn := "it was withdrawn"
	switch {
	case err != nil:
		withdrawn = "withdrawing it failed (" + err.Error() + "; its lease runs out: the key reads unknown)"
	case res == 0:
		withdrawn = "another claim holds the key now"
	case res == 2:
		withdrawn = "its lease was ended (the record it took over had expired: the key reads unknown)"
	}
	return storeutil.Hinted(fmt.Errorf("ledger at %s: %w: %s; %s, and the step was not started",
		cw.s.display, ledger.ErrNotDurable, why, withdrawn),
		"check the primary's replicas (INFO replication); replica_timeout= waits longer, replicas=0 does not wait (a failover can then lose a claim, and a step run twice)")
}
