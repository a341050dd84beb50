package mcp

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/idemkey/idemkey/derive/ledger"
	"github.com/idemkey/idemkey/derive/ledger/sqlite"
)

// The speed targets, over stdio (kernel pipes) against a
// trivial server: a passed-through message adds at most 0.1 ms at the
// median, a replayed write answers in at most 0.5 ms, and memory stays
// flat over 100,000 calls. Run them with
//
//	go test ./derive/mcp -run '^$' -bench 'PassThrough|Replay|FirstWrite|LedgerWrites' -benchtime 5000x
//	go test ./derive/mcp -run '^$' -bench Memory100k -benchtime 1x
//
// Each reports its median round trip (ms-median); PassThrough/direct is
// the same message without idemkey, so the added time is the difference.

// trivialServer answers every request at once: ping with {}, tools/call
// with a small result. It reads r and writes w, line by line.
func trivialServer(r io.Reader, w io.WriteCloser) {
	defer w.Close()
	lr := newLineReader(r)
	bw := bufio.NewWriter(w)
	for {
		line, err := lr.next()
		if err != nil {
			return
		}
		m := readMessage(line)
		if m.kind != kindRequest {
			continue
		}
		result := `{}`
		if m.method == "tools/call" {
			result = `{"content":[{"type":"text","text":"done"}]}`
		}
		bw.Write(response(m.idRaw(), []byte(result)))
		bw.WriteByte('\n')
		bw.Flush()
	}
}

// session is a client's side of pipes to a server (through idemkey or
// not).
type session struct {
	w  io.WriteCloser
	lr *lineReader
}

func (s *session) roundTrip(tb testing.TB, msg []byte) []byte {
	if _, err := s.w.Write(msg); err != nil {
		tb.Fatal(err)
	}
	line, err := s.lr.next()
	if err != nil {
		tb.Fatal(err)
	}
	return line
}

func pipe(tb testing.TB) (*os.File, *os.File) {
	r, w, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// directSession is a session with the trivial server alone.
func directSession(tb testing.TB) *session {
	toR, toW := pipe(tb)
	fromR, fromW := pipe(tb)
	go trivialServer(toR, fromW)
	return &session{w: toW, lr: newLineReader(fromR)}
}

// proxySession is a session with the trivial server through a Proxy on a
// SQLite ledger.
func proxySession(tb testing.TB, o Options) *session {
	s, _ := proxyOf(tb, o)
	return s
}

func proxyOf(tb testing.TB, o Options) (*session, *Proxy) {
	st, err := sqlite.Open(context.Background(), filepath.Join(tb.TempDir(), "ledger.db"), sqlite.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	o.Store, o.Locker = st, sqliteLocks{st}
	o.Lease, o.Holder = 30*time.Second, "bench"
	toR, toW := pipe(tb) // the server's input
	fromR, fromW := pipe(tb)
	go trivialServer(toR, fromW)
	cinR, cinW := pipe(tb) // the client's side
	coutR, coutW := pipe(tb)
	p := New(o)
	go p.Serve(context.Background(), cinR, coutW, NewStdio(toW, fromR, nil))
	return &session{w: cinW, lr: newLineReader(coutR)}, p
}

// sqliteLocks is the SQLite store's lock per key as ledger.Hold takes it
// (cmd has the same adapter).
type sqliteLocks struct{ s *sqlite.Store }

func (l sqliteLocks) TryLock(key string) (io.Closer, error) {
	f, err := l.s.LockKey(key)
	if err == sqlite.ErrLocked {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// medianRoundTrip runs b.N round trips of msg(i) and reports the median.
func medianRoundTrip(b *testing.B, s *session, msg func(i int) []byte) {
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m := msg(i)
		t0 := time.Now()
		s.roundTrip(b, m)
		times = append(times, time.Since(t0))
	}
	b.StopTimer()
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "ms-median")
}

func ping(i int) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"ping"}` + "\n")
}

// BenchmarkPassThrough: a ping without idemkey, through it, and through
// it while it holds a call (every message of the server's is then read,
// to find that call's answer).
func BenchmarkPassThrough(b *testing.B) {
	b.Run("direct", func(b *testing.B) { medianRoundTrip(b, directSession(b), ping) })
	b.Run("idemkey", func(b *testing.B) {
		medianRoundTrip(b, proxySession(b, Options{Task: "t"}), ping)
	})
	b.Run("idemkey-holding", func(b *testing.B) {
		s, p := proxyOf(b, Options{Task: "t"})
		p.mu.Lock()
		p.calls["held"] = &call{sent: true}
		p.recount()
		p.mu.Unlock()
		medianRoundTrip(b, s, ping)
	})
}

func toolsCall(id int, args string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"pay","arguments":` + args + `}}` + "\n")
}

// BenchmarkReplay: a repeated write, answered from the ledger.
func BenchmarkReplay(b *testing.B) {
	s := proxySession(b, Options{Task: "t"})
	s.roundTrip(b, toolsCall(-1, `{"amount":1999,"currency":"eur"}`))
	medianRoundTrip(b, s, func(i int) []byte { return toolsCall(i, `{"amount":1999,"currency":"eur"}`) })
}

// BenchmarkFirstWrite: a new write each time: claimed (a durable write),
// sent, recorded; FirstWrite/direct is the same call without idemkey.
func BenchmarkFirstWrite(b *testing.B) {
	call := func(i int) []byte { return toolsCall(i, `{"n":`+strconv.Itoa(i)+`}`) }
	b.Run("direct", func(b *testing.B) { medianRoundTrip(b, directSession(b), call) })
	b.Run("idemkey", func(b *testing.B) { medianRoundTrip(b, proxySession(b, Options{Task: "t"}), call) })
}

// BenchmarkLedgerWrites: the ledger's own writes for a first write (the
// claim and the completion, through ledger.Hold) without the proxy: what
// FirstWrite/idemkey may add to FirstWrite/direct.
func BenchmarkLedgerWrites(b *testing.B) {
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "ledger.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		key := fingerprint([]byte(strconv.Itoa(i)))
		held, err := ledger.Hold(context.Background(), st, ledger.HoldRequest{
			Claim:  ledger.ClaimRequest{Record: ledger.Record{Key: key, Task: "t", Tool: "pay", Kind: "mcp", Fingerprint: key, Request: []byte("{}"), Holder: "bench"}, Lease: 30 * time.Second},
			Locker: sqliteLocks{st},
		})
		if err != nil || held.Hold == nil {
			b.Fatal(err)
		}
		held.Hold.Complete(context.Background(), ledger.Outcome{State: ledger.Succeeded, Stdout: output([]byte(`{"content":[]}`))})
		times = append(times, time.Since(t0))
	}
	b.StopTimer()
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "ms-median")
}

// BenchmarkMemory100k: 100,000 calls (pings, read-only calls, replays,
// tools/list, and 1,000 new writes) through one proxy; it reports the
// live heap after the first 10,000 and after all of them: flat means the
// proxy keeps nothing per call.
func BenchmarkMemory100k(b *testing.B) {
	for n := 0; n < b.N; n++ {
		s := proxySession(b, Options{Task: "t", Tools: map[string]ToolPolicy{"read": {Mode: ModePass}}})
		var at10k uint64
		for i := 0; i < 100000; i++ {
			var msg []byte
			switch {
			case i%100 == 0:
				msg = toolsCall(i, `{"n":`+strconv.Itoa(i)+`}`) // new: 1,000 of them
			case i%4 == 0:
				msg = toolsCall(i, `{"n":0}`) // a replay
			case i%4 == 1:
				msg = []byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/call","params":{"name":"read","arguments":{"i":` + strconv.Itoa(i) + `}}}` + "\n")
			case i%4 == 2:
				msg = []byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/list"}` + "\n")
			default:
				msg = ping(i)
			}
			s.roundTrip(b, msg)
			if i == 10000 {
				at10k = liveHeap()
			}
		}
		end := liveHeap()
		b.ReportMetric(float64(at10k)/(1<<20), "MiB-at-10k")
		b.ReportMetric(float64(end)/(1<<20), "MiB-at-100k")
		if end > at10k+8<<20 {
			b.Errorf("the live heap grew from %d to %d bytes over 90,000 calls", at10k, end)
		}
	}
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
