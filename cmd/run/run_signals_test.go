package run_test

import (
	"bytes"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/idemkey/idemkey/cmd/internal/clitest"
	"github.com/idemkey/idemkey/cmd/internal/step"
)

// TestRunSlowReaderGetsAllOutput: a reader that pauses after the command
// has exited (a pager, a terminal held with ^S, a slow network pipe) gets
// the command's whole output, and the record has all of it. idemkey stops
// waiting for output 2 s after the command's exit (processes the command
// left behind may write for ever); it closed its pipes then, and what the
// command had written that the reader had not taken yet was lost: 98294 of
// 138894 bytes reached the reader.
func TestRunSlowReaderGetsAllOutput(t *testing.T) {
	t.Parallel()
	r := clitest.NewRig(t)
	// 120000 bytes fit in the pipes between the command and the reader,
	// so the command exits while the reader pauses.
	script := `head -c 120000 /dev/zero | tr '\000' a; touch ` + r.Path("mark")
	c := r.Cmd("run", "--task", "t1", "--tool", "slow", "--", "sh", "-c", script)
	out, errb, first := startReading(t, c)
	r.WaitFile("mark")
	time.Sleep(3 * time.Second) // past idemkey's 2 s wait for output after the exit
	rest, err := io.ReadAll(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(); err != nil {
		t.Fatalf("idemkey: %v: %s", err, errb.String())
	}
	if n := len(first) + len(rest); n != 120000 || strings.Trim(string(rest), "a") != "" {
		t.Fatalf("the reader got %d bytes of the command's 120000", n)
	}
	s := r.Show(r.CmdKey("t1", "slow", "sh", "-c", script))
	if s.State != "succeeded" || s.Stdout.Length != 120000 || s.Stdout.Truncated {
		t.Fatalf("record: %+v, want succeeded with all 120000 bytes", s)
	}
}

// TestRunReaderGoneKeepsWhatTheCommandWrote: the command writes all of its
// output, which waits in idemkey's pipe for a reader that then goes away
// ("| head -c 10" after the command has exited). The command succeeded and
// its writes all succeeded: the record has all of its output, and a later
// run replays all of it. idemkey closed its pipe when the reader left and
// recorded only what it had read by then (98304 of 130000 bytes), as if
// that were the whole output.
func TestRunReaderGoneKeepsWhatTheCommandWrote(t *testing.T) {
	t.Parallel()
	r := clitest.NewRig(t)
	// 130000 bytes fit in the pipes between the command and the reader.
	script := `head -c 130000 /dev/zero | tr '\000' a; echo ran >> ` + r.Path("mark")
	args := []string{"run", "--task", "t1", "--tool", "gone", "--", "sh", "-c", script}
	c := r.Cmd(args...)
	out, errb, _ := startReading(t, c)
	r.WaitFile("mark")
	out.Close() // the reader goes away
	if err := c.Wait(); err != nil {
		t.Fatalf("idemkey: %v: %s", err, errb.String())
	}
	want := strings.Repeat("a", 130000)
	s := r.Show(r.CmdKey("t1", "gone", "sh", "-c", script))
	if s.State != "succeeded" || s.Stdout.Length != 130000 || s.Stdout.Truncated || s.Stdout.SHA256 != sha256hex([]byte(want)) {
		t.Fatalf("record: %+v, want succeeded with all 130000 bytes", s)
	}
	res := r.Idemkey(args...)
	if res.Code != 0 || string(res.Stdout) != want || r.Lines("mark") != 1 {
		t.Fatalf("replay: exit %d, %d bytes of 130000", res.Code, len(res.Stdout))
	}
}

// TestRunSignalBeforeStartIsNotUnknown: idemkey stopped by a signal after
// its claim is recorded and before the command starts (a CI job cancelled
// at that moment) records the attempt failed, as a command that never ran,
// exits 128+N, and the next run runs the step. The signal killed idemkey
// there, leaving a running record with a dead holder: the next run
// reported an unknown outcome (76) for a command that had never started,
// for a person to settle.
// On SQLite for each signal, and with SIGTERM on PostgreSQL and Redis.
func TestRunSignalBeforeStartIsNotUnknown(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) { signalBeforeStart(t, clitest.NewRig(t), sig) })
	}
	clitest.EachStore(t, func(t *testing.T, s *clitest.Store) {
		r := clitest.NewRig(t)
		r.Env = append(step.WithoutEnv(r.Env, "IDEMKEY_LEDGER"), "IDEMKEY_LEDGER="+s.URL)
		signalBeforeStart(t, r, syscall.SIGTERM)
	})
	// A user signal stops nothing (idemkey forwards it to a running
	// command, and takes it in before): the step runs.
	t.Run("user signal", func(t *testing.T) {
		r := clitest.NewRig(t)
		args := []string{"run", "--task", "t1", "--tool", "usr", "--", "sh", "-c", "echo ran >> " + r.Path("mark")}
		c := r.Cmd(args...)
		c.Env = append(c.Env, "IDEMKEY_TEST_PAUSE_BEFORE_START="+r.Path("claimed"))
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		r.WaitFile("claimed")
		_ = c.Process.Signal(syscall.SIGUSR1)
		time.Sleep(200 * time.Millisecond) // for the signal to be taken in; not an assertion on time
		os.Remove(r.Path("claimed"))
		_ = c.Wait()
		if code := c.ProcessState.ExitCode(); code != 0 || r.Lines("mark") != 1 {
			t.Fatalf("exit %d, %d executions, want 0 and 1", code, r.Lines("mark"))
		}
	})
}

func signalBeforeStart(t *testing.T, r *clitest.Rig, sig syscall.Signal) {
	args := []string{"run", "--task", "t1", "--tool", "early", "--", "sh", "-c", "echo ran >> " + r.Path("mark")}
	c := r.Cmd(args...)
	c.Env = append(c.Env, "IDEMKEY_TEST_PAUSE_BEFORE_START="+r.Path("claimed"))
	var errb bytes.Buffer
	c.Stderr = &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	r.WaitFile("claimed")
	_ = c.Process.Signal(sig)
	time.Sleep(200 * time.Millisecond) // for the signal to be taken in; not an assertion on time
	os.Remove(r.Path("claimed"))
	_ = c.Wait()
	if code := c.ProcessState.ExitCode(); code != 128+int(sig) || r.Lines("mark") != 0 {
		t.Fatalf("exit %d (want %d), %d executions: %s", code, 128+int(sig), r.Lines("mark"), errb.String())
	}
	key := r.CmdKey("t1", "early", args[len(args)-3:]...)
	if s := r.Show(key); s.State != "failed" || !strings.Contains(s.Reason, "before the command started") {
		t.Fatalf("record: %+v, want failed, never started", s)
	}
	res := r.Idemkey(args...)
	if res.Code != 0 || r.Lines("mark") != 1 {
		t.Fatalf("next run: exit %d, %d executions: %s", res.Code, r.Lines("mark"), res.Stderr)
	}
	if s := r.Show(key); s.State != "succeeded" || s.Attempt != 2 {
		t.Fatalf("record after the next run: %+v", s)
	}
}

// TestRunLeaseLostContinueSaysWhoHoldsTheKey: with --on-lease-lost
// continue, the command finishes and its outcome is not recorded over the
// newer attempt's; the warning says so. It said "the next attempt will find
// it unknown", which is false: the next attempt finds the newer attempt's
// record.
func TestRunLeaseLostContinueSaysWhoHoldsTheKey(t *testing.T) {
	r := clitest.NewRig(t)
	script := `touch ` + r.Path("mark") + `; while [ ! -e ` + r.Path("release") + ` ]; do sleep 0.02; done; echo finished`
	c := r.Cmd("run", "--task", "t1", "--tool", "lease", "--lease", "150ms", "--on-lease-lost", "continue", "--", "sh", "-c", script)
	var out bytes.Buffer
	errf, err := os.Create(r.Path("stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer errf.Close()
	c.Stdout, c.Stderr = &out, errf
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	r.WaitFile("mark")
	// A newer attempt takes the key over, as a takeover on a shared store
	// would.
	r.ExecLedger(`UPDATE records SET attempt = 2, holder = 'elsewhere'`)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, _ := os.ReadFile(r.Path("stderr")); bytes.Contains(b, []byte("lease lost")) || time.Now().After(deadline) {
			break
		}
	}
	os.WriteFile(r.Path("release"), nil, 0o644)
	_ = c.Wait()
	b, _ := os.ReadFile(r.Path("stderr"))
	said := string(b)
	if c.ProcessState.ExitCode() != 0 || out.String() != "finished\n" {
		t.Fatalf("exit %d, stdout %q: %s", c.ProcessState.ExitCode(), out.String(), said)
	}
	if strings.Contains(said, "will find it unknown") || !strings.Contains(said, "attempt 2 holds the key now; its record stands") {
		t.Fatalf("the warning: %s", said)
	}
}

// stallProxy forwards TCP connections on 127.0.0.1 to a real server and,
// while paused, stops passing bytes either way (the connections stay
// open): a store that no longer answers, as in a network partition.
type stallProxy struct {
	addr   string
	paused atomic.Bool
}

func newStallProxy(t *testing.T, upstream string) *stallProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	p := &stallProxy{addr: l.Addr().String()}
	pipe := func(dst, src net.Conn) {
		defer dst.Close()
		defer src.Close()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			for p.paused.Load() {
				time.Sleep(5 * time.Millisecond)
			}
			if n > 0 {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", upstream)
			if err != nil {
				c.Close()
				continue
			}
			go pipe(u, c)
			go pipe(c, u)
		}
	}()
	return p
}

// stalledRedisRig is a rig whose ledger is a Redis server reached through a
// stallProxy.
func stalledRedisRig(t *testing.T) (*clitest.Rig, *stallProxy) {
	rs := clitest.RedisStore(t)
	u, err := url.Parse(rs.URL)
	if err != nil {
		t.Fatal(err)
	}
	px := newStallProxy(t, u.Host)
	u.Host = px.addr
	r := clitest.NewRig(t)
	r.Env = append(step.WithoutEnv(r.Env, "IDEMKEY_LEDGER"), "IDEMKEY_LEDGER="+u.String())
	return r, px
}

// TestRunSignalForwardedWhileStoreStalls: a SIGTERM sent to idemkey while
// a lease renewal waits on a store that does not answer reaches the command
// at once. The renewals and the forwarding shared one loop: the signal
// waited for the renewal, and when that renewal found the lease lost, the
// command was killed (SIGKILL) without ever getting the SIGTERM (its
// cleanup never ran).
func TestRunSignalForwardedWhileStoreStalls(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits for lease renewals (6 s)")
	}
	r, px := stalledRedisRig(t)
	script := `trap 'echo got TERM >> ` + r.Path("term") + `; exit 0' TERM; touch ` + r.Path("mark") +
		`; i=0; while [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done`
	// --lease 6s: a renewal every 2 s, each given 2 s. Stalled from the
	// start, the renewal begun at 2 s fails at 4 s; the one begun at 4 s
	// fails at 6 s, when the lease has run out: lost, the command killed.
	c := r.Cmd("run", "--task", "t1", "--tool", "stall", "--lease", "6s", "--", "sh", "-c", script)
	var errb bytes.Buffer
	c.Stderr = &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { c.Wait(); close(done) }()
	r.WaitFile("mark")
	px.paused.Store(true)
	time.Sleep(5 * time.Second) // into the renewal begun at 4 s; not an assertion on time
	_ = c.Process.Signal(syscall.SIGTERM)
	got := false
	for deadline := time.Now().Add(20 * time.Second); !got && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		_, err := os.Stat(r.Path("term"))
		got = err == nil
		select {
		case <-done:
			_, err := os.Stat(r.Path("term"))
			got = err == nil
			deadline = time.Now()
		default:
		}
	}
	px.paused.Store(false)
	<-done
	if !got {
		t.Fatalf("the command never got the SIGTERM sent to idemkey (exit %d): %s", c.ProcessState.ExitCode(), errb.String())
	}
}

// startReading starts c with its stdout on a pipe the test reads, and
// reads its first 10 bytes (the command has started writing).
func startReading(t *testing.T, c *exec.Cmd) (io.ReadCloser, *bytes.Buffer, []byte) {
	t.Helper()
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errb := new(bytes.Buffer)
	c.Stderr = errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	first := make([]byte, 10)
	if _, err := io.ReadFull(out, first); err != nil {
		t.Fatal(err)
	}
	return out, errb, first
}
