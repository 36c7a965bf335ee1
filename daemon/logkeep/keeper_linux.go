package logkeep

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/sessiond/sessiond/daemon/logfile"
	"github.com/sessiond/sessiond/daemon/memory/exepages"
)

// bufSize is the most one move carries from a pipe into its log.
const bufSize = 256 << 10

// drainTimeout bounds how long a drain waits for the next move: a log
// whose rotation does not make room (a disk that refuses) must not hold a
// session's end for ever. A drain that moves on, however slowly (a loaded
// machine, a rotator that lags), goes on, within drainMax. A write held
// for want of room (writeOut) is waited for without either bound: the
// state dir it fills is the one the session's end is written to.
const (
	drainTimeout = 5 * time.Second
	drainMax     = time.Minute
)

// writeRetryMin and writeRetryMax bound the wait between tries of a log
// write that failed (writeOut).
const (
	writeRetryMin = 10 * time.Millisecond
	writeRetryMax = time.Second
)

// orphanWait is how long a keeper with no pipe waits for its first daemon.
const orphanWait = 30 * time.Second

var bufs = sync.Pool{New: func() any { b := make([]byte, bufSize); return &b }}

// Serve runs the keeper on the socket at sock: it writes "ready\n" to
// ready once it listens, and returns once no daemon is connected and it
// holds no pipe (or, with none ever, after orphanWait). Another keeper
// already answering on sock makes it return at once, nil.
func Serve(sock string, ready io.Writer, log *zap.Logger) error {
	if log == nil {
		log = zap.NewNop()
	}
	unix.Umask(0o077)
	if c, err := net.Dial("unixpacket", sock); err == nil {
		c.Close()
		_, _ = io.WriteString(ready, "ready\n")
		return nil
	}
	_ = os.Remove(sock)
	l, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: sock, Net: "unixpacket"})
	if err != nil {
		return fmt.Errorf("log keeper: %w", err)
	}
	// The socket is 0600 as bound (the umask above): nothing is changed
	// by its path afterwards.
	l.SetUnlinkOnClose(false)
	k := &keeper{log: log, streams: map[string]*stream{}, done: make(chan struct{}), sock: sock}
	k.rest.gc = debug.SetGCPercent(-1)
	debug.SetGCPercent(k.rest.gc)
	go k.accept(l)
	if _, err := io.WriteString(ready, "ready\n"); err != nil {
		log.Warn("tell the daemon the keeper is ready", zap.Error(err))
	}
	// What the start-up of the whole sessiond executable faulted in, a
	// keeper never runs again: most of its resident set.
	_, _ = exepages.Drop()
	orphan := time.AfterFunc(orphanWait, k.checkExit)
	resting := make(chan struct{})
	go func() { k.rest.run(k.done); close(resting) }()
	<-k.done
	orphan.Stop()
	<-resting
	// The socket goes before the listener closes: a daemon that dials in
	// between finds nothing and starts a new keeper, rather than one that
	// is leaving.
	_ = os.Remove(sock)
	l.Close()
	return nil
}

type keeper struct {
	log  *zap.Logger
	sock string
	rest rest

	mu      sync.Mutex
	streams map[string]*stream
	owner   *net.UnixConn // the daemon connected, nil while none
	served  bool          // a daemon connected once
	done    chan struct{}
	exiting bool
}

func (k *keeper) accept(l *net.UnixListener) {
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				k.log.Warn("log keeper accept", zap.Error(err))
			}
			return
		}
		if err := ownUser(c); err != nil {
			k.log.Warn("log keeper refused a connection", zap.Error(err))
			c.Close()
			continue
		}
		go k.serve(c)
	}
}

// serve answers one daemon's requests until it goes.
func (k *keeper) serve(c *net.UnixConn) {
	defer k.disconnected(c)
	for {
		var req request
		files, err := receive(c, &req)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.EOF) {
				k.log.Warn("log keeper request", zap.Error(err))
			}
			return
		}
		k.rest.busy()
		if err := k.handle(c, req, files); err != nil {
			k.log.Warn("log keeper reply", zap.Error(err))
			return
		}
	}
}

func (k *keeper) handle(c *net.UnixConn, req request, files []int) error {
	switch req.Op {
	case "hello":
		closeFDs(files)
		return k.hello(c)
	case "add":
		if len(files) != 2 || req.Path == "" {
			closeFDs(files)
			return send(c, reply{Error: "add takes a path, a pipe and a log"})
		}
		if err := k.add(req, files[0], files[1]); err != nil {
			closeFDs(files)
			return send(c, reply{Error: err.Error()})
		}
		return send(c, reply{})
	case "drain", "release":
		closeFDs(files)
		k.mu.Lock()
		s := k.streams[req.Path]
		k.mu.Unlock()
		if s != nil {
			s.drain()
			if req.Op == "release" {
				s.close()
			}
		}
		return send(c, reply{})
	case "release-all":
		closeFDs(files)
		return k.releaseAll(c, req.Paths)
	}
	closeFDs(files)
	return send(c, reply{Error: fmt.Sprintf("unknown log keeper request %q", req.Op)})
}

// releaseAll releases the streams of paths as release does each, their
// drains at once. It answers for each as its drain ends, those that end
// together in one reply (More while some are left), so that a log slow to
// take its rest holds up none of the others.
func (k *keeper) releaseAll(c *net.UnixConn, paths []string) error {
	released := make(chan string, len(paths))
	k.mu.Lock()
	for _, p := range paths {
		s := k.streams[p]
		if s == nil {
			released <- p
			continue
		}
		go func() {
			s.drain()
			s.close()
			released <- p
		}()
	}
	k.mu.Unlock()
	for left := len(paths); left > 0; {
		r := reply{Paths: []string{<-released}}
		for left--; left > 0; left-- {
			select {
			case p := <-released:
				r.Paths = append(r.Paths, p)
				continue
			default:
			}
			break
		}
		r.More = left > 0
		if err := send(c, r); err != nil {
			return err
		}
	}
	return nil
}

// hello makes c the daemon: the keeper stops rotating the logs itself
// and lists the pipes it holds, with their read ends.
func (k *keeper) hello(c *net.UnixConn) error {
	k.mu.Lock()
	old := k.owner
	k.owner, k.served = c, true
	streams := make([]*stream, 0, len(k.streams))
	for _, s := range k.streams {
		streams = append(streams, s)
	}
	k.mu.Unlock()
	if old != nil && old != c {
		old.Close()
	}
	for _, s := range streams {
		s.handRotationBack()
	}
	for i := 0; ; i += maxFDs {
		batch := streams[i:min(i+maxFDs, len(streams))]
		r := reply{More: i+maxFDs < len(streams)}
		fds := make([]int, 0, len(batch))
		for _, s := range batch {
			if fd, ok := s.pipeFD(); ok {
				r.Paths = append(r.Paths, s.path)
				fds = append(fds, fd)
			}
		}
		err := send(c, r, fds...)
		for _, s := range batch {
			s.pipeDone()
		}
		if err != nil {
			return err
		}
		if !r.More {
			return nil
		}
	}
}

// disconnected: the daemon c went; if it was the daemon, the keeper
// rotates the logs itself until the next one comes.
func (k *keeper) disconnected(c *net.UnixConn) {
	c.Close()
	k.mu.Lock()
	if k.owner != c {
		k.mu.Unlock()
		return
	}
	k.owner = nil
	streams := make([]*stream, 0, len(k.streams))
	for _, s := range k.streams {
		streams = append(streams, s)
	}
	k.mu.Unlock()
	for _, s := range streams {
		s.takeRotation()
	}
	k.checkExit()
}

// add keeps the pipe's read end pipeFD, moving what comes into the log
// outFD; on success both are the stream's.
func (k *keeper) add(req request, pipeFD, outFD int) error {
	var st unix.Stat_t
	if err := unix.Fstat(outFD, &st); err != nil {
		return fmt.Errorf("log keeper: stat log: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("log keeper: log %s is not a regular file", req.Path)
	}
	if fl, err := unix.FcntlInt(uintptr(outFD), unix.F_GETFL, 0); err != nil || fl&unix.O_APPEND == 0 {
		return fmt.Errorf("log keeper: log %s is not open for appending", req.Path)
	}
	var pst unix.Stat_t
	if err := unix.Fstat(pipeFD, &pst); err != nil || pst.Mode&unix.S_IFMT != unix.S_IFIFO {
		return fmt.Errorf("log keeper: the output of %s is not a pipe", req.Path)
	}
	// Non-blocking, so that its reads wait in the poller.
	if err := unix.SetNonblock(pipeFD, true); err != nil {
		return fmt.Errorf("log keeper: %w", err)
	}
	s := &stream{k: k, path: req.Path, max: req.Max, keep: req.Keep, progress: make(chan struct{})}
	s.limit = limitOf(req.Max, int64(st.Blksize))
	k.mu.Lock()
	if old := k.streams[req.Path]; old != nil {
		k.mu.Unlock()
		return fmt.Errorf("log keeper: %s is kept already", req.Path)
	}
	s.pipe, s.out = os.NewFile(uintptr(pipeFD), "pipe"), os.NewFile(uintptr(outFD), req.Path)
	k.streams[req.Path] = s
	self := k.owner == nil
	k.mu.Unlock()
	if self {
		s.takeRotation()
	}
	go s.run()
	return nil
}

// limitOf is the most bytes output.log may hold: its cap plus one chunk,
// as package logfile raises and rounds them.
func limitOf(maxSize, block int64) int64 {
	if maxSize <= 0 {
		return 1<<63 - 1
	}
	block = max(block, 512)
	m := max(maxSize, block)
	return m + m/block*block
}

func (k *keeper) removed(s *stream) {
	k.mu.Lock()
	if k.streams[s.path] == s {
		delete(k.streams, s.path)
	}
	k.mu.Unlock()
	k.checkExit()
}

// checkExit ends the keeper when it serves no one.
func (k *keeper) checkExit() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.exiting || k.owner != nil || len(k.streams) > 0 {
		return
	}
	k.exiting = true
	close(k.done)
}

// stream is one session's pipe and log.
type stream struct {
	k     *keeper
	path  string
	pipe  *os.File
	out   *os.File
	max   int64
	keep  int
	limit int64
	used  int64 // bytes output.log holds, as last seen plus what was written since (run's own)

	mu sync.Mutex
	// rot rotates the log while no daemon is connected.
	rot *logfile.Log
	// taken counts the bytes read from the pipe (under mu, with the read
	// itself, so that a drain sees each byte in the pipe or taken), moved
	// those written to the log.
	taken  int64
	moved  int64
	eof    bool
	closed bool
	// held says a write failed for want of room and is being tried
	// again (writeOut): a drain waits for it however long it takes.
	held     bool
	progress chan struct{} // closed at each move, and at the end
	dups     []int         // pipeFD's, until pipeDone
}

func (s *stream) run() {
	defer s.finish()
	rc, err := s.pipe.SyscallConn()
	if err != nil {
		s.k.log.Warn("log keeper pipe", zap.String("path", s.path), zap.Error(err))
		return
	}
	s.used = s.onDisk()
	for {
		room := s.limit - s.used
		if room < bufSize {
			s.used = s.onDisk()
			room = s.limit - s.used
		}
		if room <= 0 {
			if !s.makeRoom() {
				return
			}
			continue
		}
		var n int
		var rerr error
		bp := bufs.Get().(*[]byte)
		b := (*bp)[:min(int64(len(*bp)), room)]
		err := rc.Read(func(fd uintptr) bool {
			s.mu.Lock()
			for {
				n, rerr = unix.Read(int(fd), b)
				if rerr != unix.EINTR {
					break
				}
			}
			if n > 0 {
				s.taken += int64(n)
			}
			s.mu.Unlock()
			return rerr != unix.EAGAIN
		})
		if err == nil {
			err = rerr
		}
		if err != nil || n <= 0 {
			bufs.Put(bp)
			// n == 0: every writer is gone.
			if err != nil && !errors.Is(err, os.ErrClosed) {
				s.k.log.Warn("log keeper read", zap.String("path", s.path), zap.Error(err))
			}
			return
		}
		s.k.rest.busy()
		s.writeOut(b[:n])
		bufs.Put(bp)
		s.used += int64(n)
		s.moved1(int64(n))
	}
}

// writeOut writes b to the log, all of it. A write that fails for want of
// room (a full disk, a quota) keeps what it did not write and is tried
// again, every writeRetryMax at the longest, while nothing more is read
// from the pipe: the command's output waits in the pipe and then in its
// own write(2), as it does at the log's cap, and none of it is lost or
// cut mid-line; a drain waits for it meanwhile. Only the stream's close
// ends the wait, dropping what was held. Any other failure drops the
// chunk, as nothing would make a retry succeed.
func (s *stream) writeOut(b []byte) {
	wait := writeRetryMin
	held := false
	defer func() {
		if held {
			s.mu.Lock()
			s.held = false
			s.mu.Unlock()
		}
	}()
	for len(b) > 0 {
		n, err := s.out.Write(b)
		b = b[n:]
		if err == nil {
			break
		}
		if !errors.Is(err, unix.ENOSPC) && !errors.Is(err, unix.EDQUOT) {
			s.k.log.Warn("log keeper write", zap.String("path", s.path), zap.Error(err), zap.Int("dropped", len(b)))
			return
		}
		s.mu.Lock()
		closed := s.closed
		if !held && !closed {
			s.held, held = true, true
			s.k.log.Warn("log keeper write failed: the session's output is held until there is room", zap.String("path", s.path), zap.Error(err))
		}
		s.mu.Unlock()
		if closed {
			s.k.log.Warn("log keeper: the output held for want of room is dropped: the stream is closed", zap.String("path", s.path), zap.Int("bytes", len(b)))
			return
		}
		time.Sleep(wait)
		wait = min(2*wait, writeRetryMax)
	}
	if held {
		s.k.log.Info("log keeper write succeeded again: the held output is in the log", zap.String("path", s.path))
	}
}

// pipeFD returns the pipe's descriptor for a hello's reply, held open
// until pipeDone.
func (s *stream) pipeFD() (int, bool) {
	rc, err := s.pipe.SyscallConn()
	if err != nil {
		return 0, false
	}
	fd := -1
	// A duplicate: the stream may close its own while the reply is sent.
	_ = rc.Control(func(f uintptr) { fd, _ = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0) })
	if fd < 0 {
		return 0, false
	}
	s.mu.Lock()
	s.dups = append(s.dups, fd)
	s.mu.Unlock()
	return fd, true
}

// pipeDone closes what pipeFD handed out.
func (s *stream) pipeDone() {
	s.mu.Lock()
	closeFDs(s.dups)
	s.dups = nil
	s.mu.Unlock()
}

// moved1 records n bytes moved; the keeper's own rotation, if it has it,
// stamps and rotates them.
func (s *stream) moved1(n int64) {
	s.mu.Lock()
	s.moved += n
	if s.rot != nil {
		s.rot.Seen(time.Now())
		if s.used > s.max {
			_ = s.rot.Rotate()
		}
	}
	close(s.progress)
	s.progress = make(chan struct{})
	s.mu.Unlock()
}

// makeRoom waits until the log has room again: the keeper rotates it, or
// the daemon's rotator does, woken by the writes. It reports false when
// the stream is closed meanwhile.
func (s *stream) makeRoom() bool {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return false
		}
		if s.rot != nil {
			if err := s.rot.Rotate(); err != nil {
				s.k.log.Warn("log keeper rotate", zap.String("path", s.path), zap.Error(err))
			}
		}
		s.mu.Unlock()
		if s.used = s.onDisk(); s.used < s.limit {
			return true
		}
		time.Sleep(time.Millisecond)
	}
}

// onDisk is what output.log takes on disk (its blocks: a punched hole
// counts for nothing).
func (s *stream) onDisk() int64 {
	var st unix.Stat_t
	if err := unix.Fstat(int(s.out.Fd()), &st); err != nil {
		return 0
	}
	return st.Blocks * 512
}

// drain waits until what the pipe holds now (FIONREAD, which Linux names
// TIOCINQ) and what was taken from it is in the log, its writers are gone,
// or nothing moved for drainTimeout (or drainMax passed). A chunk read and
// not yet written is in neither the pipe nor the log: counted as moved
// only, it let a drain end with the pipe's last bytes still in it.
func (s *stream) drain() {
	var pending int
	s.mu.Lock()
	if rc, err := s.pipe.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { pending, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) })
	}
	target := s.taken + int64(pending)
	s.mu.Unlock()
	idle := time.NewTimer(drainTimeout)
	defer idle.Stop()
	whole := time.NewTimer(drainMax)
	defer whole.Stop()
	for {
		s.mu.Lock()
		if s.moved >= target || s.eof || s.closed {
			s.mu.Unlock()
			return
		}
		wait := s.progress
		s.mu.Unlock()
		select {
		case <-wait:
			idle.Reset(drainTimeout)
		case <-idle.C:
			if s.isHeld() {
				idle.Reset(drainTimeout)
				continue
			}
			s.k.log.Warn("log keeper: drain timed out: nothing moved", zap.String("path", s.path), zap.Duration("for", drainTimeout))
			return
		case <-whole.C:
			if s.isHeld() {
				whole.Reset(drainMax)
				continue
			}
			s.k.log.Warn("log keeper: drain timed out", zap.String("path", s.path), zap.Duration("after", drainMax))
			return
		}
	}
}

// isHeld reports whether a write waits for room (writeOut).
func (s *stream) isHeld() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

// close stops keeping the stream: what is still in the pipe is dropped,
// as the pipe is.
func (s *stream) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	_ = s.pipe.Close()
}

// finish ends the stream at its writers' end (or its close).
func (s *stream) finish() {
	s.mu.Lock()
	s.eof = true
	if !s.closed {
		s.closed = true
		_ = s.pipe.Close()
	}
	rot := s.rot
	s.rot = nil
	close(s.progress)
	s.progress = make(chan struct{})
	s.mu.Unlock()
	if rot != nil {
		_ = rot.Rotate()
		_ = rot.Close()
	}
	_ = s.out.Close()
	s.k.removed(s)
}

// takeRotation starts the keeper's own rotation of the log (no daemon
// is connected).
func (s *stream) takeRotation() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rot != nil || s.closed || s.max <= 0 {
		return
	}
	l, err := logfile.Open(s.path, logfile.Options{MaxSize: s.max, Keep: s.keep, Stamps: true, Logger: s.k.log})
	if err != nil {
		s.k.log.Warn("log keeper cannot rotate a log", zap.String("path", s.path), zap.Error(err))
		return
	}
	s.rot = l
}

// handRotationBack stops the keeper's own rotation (a daemon is here).
func (s *stream) handRotationBack() {
	s.mu.Lock()
	rot := s.rot
	s.rot = nil
	s.mu.Unlock()
	if rot != nil {
		// The last bytes it moved are stamped, then it lets go.
		rot.Seen(time.Now())
		_ = rot.Close()
	}
}
