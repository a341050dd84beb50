package testserver

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Client is a plain client of the server, for a test's own commands; the
// test's end closes it.
func (r *Redis) Client(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// Addr is the server's host:port.
func (r *Redis) Addr() string { return fmt.Sprintf("127.0.0.1:%d", r.Port) }

// Signal sends sig to the server (SIGSTOP freezes it, SIGCONT thaws it).
func (r *Redis) Signal(sig syscall.Signal) { syscall.Kill(r.p.cmd.Process.Pid, sig) }

// Info returns the fields of the server's INFO section.
func (r *Redis) Info(t testing.TB, section string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1})
	defer c.Close()
	s, err := c.Info(ctx, section).Result()
	if err != nil {
		t.Fatalf("INFO %s of %s: %v", section, r.Addr(), err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			m[k] = v
		}
	}
	return m
}

// WaitFor polls cond every few milliseconds until it holds, failing the
// test after timeout with what.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for delay := 5 * time.Millisecond; !cond(); delay = min(2*delay, 100*time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", timeout, what)
		}
		time.Sleep(delay)
	}
}

// NewRedisReplica starts a redis-server replicating primary, and returns
// once it has synchronized.
func NewRedisReplica(t testing.TB, primary *Redis, extra ...string) *Redis {
	t.Helper()
	r := NewRedis(t, append([]string{"--replicaof", "127.0.0.1", itoa(primary.Port)}, extra...)...)
	r.WaitCaughtUp(t, primary)
	return r
}

// WaitCaughtUp waits until the replica's link to primary is up and it
// has acknowledged every write the primary has made so far (its offset).
func (r *Redis) WaitCaughtUp(t testing.TB, primary *Redis) {
	t.Helper()
	want, _ := strconv.ParseInt(primary.Info(t, "replication")["master_repl_offset"], 10, 64)
	WaitFor(t, 30*time.Second, r.Addr()+" catching up with "+primary.Addr(), func() bool {
		m := r.Info(t, "replication")
		off, _ := strconv.ParseInt(m["slave_repl_offset"], 10, 64)
		return m["master_link_status"] == "up" && off >= want
	})
}

// RedisCluster is a Redis Cluster of the test's own on loopback ports.
type RedisCluster struct {
	Nodes []*Redis
	t     testing.TB
}

func redisCLI() (string, error) {
	if bin, err := redisBin(); err == nil {
		if p := filepath.Join(filepath.Dir(bin), "redis-cli"); isExec(p) {
			return p, nil
		}
	}
	return exec.LookPath("redis-cli")
}

// NewRedisCluster starts primaries*(1+replicas) redis-servers in cluster
// mode, joins them with redis-cli --cluster create (each primary gets
// replicas replicas), and returns once every node reports cluster_state:ok
// and every replica has synchronized. extra are redis-server options of
// every node.
func NewRedisCluster(t testing.TB, primaries, replicas int, extra ...string) *RedisCluster {
	t.Helper()
	cli, err := redisCLI()
	if err != nil {
		missing(t, "redis-cli", err)
	}
	c := &RedisCluster{t: t}
	var addrs []string
	for i := 0; i < primaries*(1+replicas); i++ {
		r := NewRedis(t, append([]string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "3000"}, extra...)...)
		c.Nodes = append(c.Nodes, r)
		addrs = append(addrs, r.Addr())
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", itoa(replicas), "--cluster-yes")
	cmd := exec.Command(cli, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	c.WaitOK()
	for _, n := range c.Nodes {
		if m := n.Info(t, "replication"); m["role"] == "slave" {
			n.WaitCaughtUp(t, c.node(m["master_host"]+":"+m["master_port"]))
		}
	}
	return c
}

func (c *RedisCluster) node(addr string) *Redis {
	for _, n := range c.Nodes {
		if n.Addr() == addr {
			return n
		}
	}
	c.t.Fatalf("no node %s in the cluster", addr)
	return nil
}

// URL is the cluster's redis:// URL: its first node, and every other as
// an addr= seed.
func (c *RedisCluster) URL() string {
	u := fmt.Sprintf("redis://%s/0", c.Nodes[0].Addr())
	for i, n := range c.Nodes[1:] {
		if i == 0 {
			u += "?"
		} else {
			u += "&"
		}
		u += "addr=" + n.Addr()
	}
	return u
}

// alive reports whether the node's process still runs.
func (r *Redis) alive() bool { return r.p != nil && !r.p.exited() }

// WaitOK waits until every live node reports cluster_state:ok and knows
// every live node's view of which node serves each slot.
func (c *RedisCluster) WaitOK() {
	c.t.Helper()
	WaitFor(c.t, 60*time.Second, "cluster_state:ok on every live node, with one view of the slots", func() bool {
		view := ""
		for _, n := range c.Nodes {
			if !n.alive() {
				continue
			}
			state, v := c.slotView(n)
			if !strings.Contains(state, "cluster_state:ok") {
				return false
			}
			if view != "" && v != view {
				return false
			}
			view = v
		}
		return true
	})
}

// slotView is the node's CLUSTER INFO, and its CLUSTER SLOTS as text:
// ranges and their primaries.
func (c *RedisCluster) slotView(n *Redis) (info, view string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cl := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
	defer cl.Close()
	info, err := cl.ClusterInfo(ctx).Result()
	if err != nil {
		return "", ""
	}
	slots, err := cl.ClusterSlots(ctx).Result()
	if err != nil {
		return "", ""
	}
	var b strings.Builder
	for _, s := range slots {
		if len(s.Nodes) > 0 {
			fmt.Fprintf(&b, "%d-%d:%s ", s.Start, s.End, s.Nodes[0].Addr)
		}
	}
	return info, b.String()
}

// Primaries are the nodes that are primaries now.
func (c *RedisCluster) Primaries() []*Redis {
	var out []*Redis
	for _, n := range c.Nodes {
		if n.alive() && n.Info(c.t, "replication")["role"] == "master" {
			out = append(out, n)
		}
	}
	return out
}

// ReplicaOf returns a live replica of primary.
func (c *RedisCluster) ReplicaOf(primary *Redis) *Redis {
	c.t.Helper()
	for _, n := range c.Nodes {
		if !n.alive() || n == primary {
			continue
		}
		m := n.Info(c.t, "replication")
		if m["role"] == "slave" && m["master_port"] == itoa(primary.Port) {
			return n
		}
	}
	c.t.Fatalf("%s has no replica", primary.Addr())
	return nil
}

// KillAndPromote kills primary (SIGKILL), first waiting until its
// replica has caught up when caughtUp is set, then promotes the replica
// (CLUSTER FAILOVER TAKEOVER) and waits until the cluster serves every
// slot again. It returns the promoted replica.
func (c *RedisCluster) KillAndPromote(primary *Redis, caughtUp bool) *Redis {
	c.t.Helper()
	rep := c.ReplicaOf(primary)
	if caughtUp {
		rep.WaitCaughtUp(c.t, primary)
	}
	primary.Stop(syscall.SIGKILL)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl := redis.NewClient(&redis.Options{Addr: rep.Addr(), MaxRetries: -1})
	defer cl.Close()
	if err := cl.Do(ctx, "CLUSTER", "FAILOVER", "TAKEOVER").Err(); err != nil {
		c.t.Fatalf("CLUSTER FAILOVER TAKEOVER on %s: %v", rep.Addr(), err)
	}
	WaitFor(c.t, 30*time.Second, rep.Addr()+" promoted", func() bool {
		return rep.Info(c.t, "replication")["role"] == "master"
	})
	c.WaitOK()
	return rep
}

// NodeID is the node's cluster id.
func (r *Redis) NodeID(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := r.Client(t).Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		t.Fatalf("CLUSTER MYID of %s: %v", r.Addr(), err)
	}
	return id
}

// Reshard moves n slots from one primary to another with redis-cli
// --cluster reshard (MIGRATE, key by key: ASK and then MOVED for the
// clients meanwhile), and returns when it is done.
func (c *RedisCluster) Reshard(from, to *Redis, n int) error {
	cli, err := redisCLI()
	if err != nil {
		return err
	}
	out, err := exec.Command(cli, "--cluster", "reshard", from.Addr(), "--cluster-from", from.NodeID(c.t),
		"--cluster-to", to.NodeID(c.t), "--cluster-slots", itoa(n), "--cluster-yes").CombinedOutput()
	if err != nil {
		return fmt.Errorf("redis-cli --cluster reshard: %v\n%s", err, out)
	}
	return nil
}
