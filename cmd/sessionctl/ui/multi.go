package ui

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/sessiond/sessiond/ipc"
)

// The dashboard of several hosts (sessionctl ui --all-contexts) is the
// dashboard of one, talking to a daemon of its own making: an HTTP server
// in this process, on a private socket, that asks every host. A listing is
// every host's, each record with its host; the event stream is every
// host's together, each reconnected on its own while it is down; a request
// about one session goes to the host it came from.

// Host is one host of the dashboard: a context's name and its client.
type Host struct {
	Name   string
	Client *ipc.Client
}

// HostState is how a host of the dashboard stands.
type HostState struct {
	Name   string
	Online bool
	Err    string
}

// multi is the server that asks every host.
type multi struct {
	hosts []Host

	mu    sync.Mutex
	state map[string]HostState
	owner map[string]int // session id → host
	dirOf map[string]int // project dir → host
}

// recordPath is a route that answers a session's record.
var recordPath = regexp.MustCompile(`^/v1/sessions/[^/]+(/stop|/extend)?$`)

// maxPassBody bounds a request passed on to a host.
const maxPassBody = 16 << 20

// hostTimeout bounds each host's answer to a listing.
const hostTimeout = 5 * time.Second

// serveHosts starts the server and returns the client of it, and the
// hosts' states for the header.
func serveHosts(ctx context.Context, hosts []Host) (*ipc.Client, func() []HostState, error) {
	dir, err := os.MkdirTemp("", "sessionctl-ui-")
	if err != nil {
		return nil, nil, err
	}
	sock := filepath.Join(dir, "hosts.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	m := &multi{hosts: hosts, state: map[string]HostState{}, owner: map[string]int{}, dirOf: map[string]int{}}
	for _, h := range hosts {
		m.state[h.Name] = HostState{Name: h.Name}
	}
	srv := &http.Server{Handler: m}
	go func() { _ = srv.Serve(l) }()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
		os.RemoveAll(dir)
	}()
	return &ipc.Client{Socket: sock}, m.states, nil
}

// states are the hosts' states, in their order.
func (m *multi) states() []HostState {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]HostState, 0, len(m.hosts))
	for _, h := range m.hosts {
		out = append(out, m.state[h.Name])
	}
	return out
}

func (m *multi) setState(i int, err error) {
	st := HostState{Name: m.hosts[i].Name, Online: err == nil}
	if err != nil {
		var un *ipc.UnreachableError
		if errors.As(err, &un) {
			err = un.Err
		}
		st.Err = err.Error()
	}
	m.mu.Lock()
	m.state[st.Name] = st
	m.mu.Unlock()
}

func (m *multi) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch p := r.URL.Path; {
	case r.Method == http.MethodGet && p == "/v1/sessions":
		m.list(w, r)
	case r.Method == http.MethodGet && p == "/v1/events":
		m.events(w, r)
	case strings.HasPrefix(p, "/v1/sessions/"):
		id, _, _ := strings.Cut(strings.TrimPrefix(p, "/v1/sessions/"), "/")
		i := m.hostOf(m.owner, id)
		if i < 0 {
			i = m.find(r.Context(), id)
		}
		m.pass(w, r, i)
	case strings.HasPrefix(p, "/v1/projects/"):
		m.pass(w, r, m.hostOf(m.dirOf, r.URL.Query().Get("dir")))
	default:
		m.pass(w, r, 0)
	}
}

func (m *multi) hostOf(index map[string]int, key string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i, ok := index[key]; ok {
		return i
	}
	return -1
}

// list asks every host at once and answers with every record, each with
// its host; a host that does not answer is left out (and shown offline).
func (m *multi) list(w http.ResponseWriter, r *http.Request) {
	results := make([][]ipc.Session, len(m.hosts))
	var wg sync.WaitGroup
	for i, h := range m.hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(r.Context(), hostTimeout)
			defer cancel()
			resp, err := h.Client.Raw(ctx, ipc.Request{Method: "GET", Target: r.URL.RequestURI()})
			if err == nil && resp.StatusCode != http.StatusOK {
				resp.Body.Close()
				err = fmt.Errorf("%s", resp.Status)
			}
			if err != nil {
				m.setState(i, err)
				return
			}
			defer resp.Body.Close()
			var list []ipc.Session
			if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
				m.setState(i, err)
				return
			}
			for k := range list {
				list[k].Host = h.Name
			}
			results[i] = list
			m.setState(i, nil)
		}()
	}
	wg.Wait()
	all := []ipc.Session{}
	m.mu.Lock()
	for i, list := range results {
		for _, s := range list {
			if _, taken := m.owner[s.ID]; !taken || m.owner[s.ID] == i {
				m.owner[s.ID] = i
				m.dirOf[s.ProjectDir] = i
				all = append(all, s)
			}
		}
	}
	m.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(all)
}

// events is every host's event stream together; each host's is opened
// again while it is down, until the dashboard's request ends.
func (m *multi) events(w http.ResponseWriter, r *http.Request) {
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	if fl != nil {
		fl.Flush()
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, h := range m.hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r.Context().Err() == nil {
				resp, err := h.Client.Raw(r.Context(), ipc.Request{Method: "GET", Target: r.URL.RequestURI()})
				if err == nil && resp.StatusCode != http.StatusOK {
					resp.Body.Close()
					err = fmt.Errorf("%s", resp.Status)
				}
				if err != nil {
					m.setState(i, err)
					select {
					case <-r.Context().Done():
						return
					case <-time.After(3 * time.Second):
					}
					continue
				}
				m.setState(i, nil)
				sc := bufio.NewScanner(resp.Body)
				sc.Buffer(nil, 4<<20)
				for sc.Scan() {
					mu.Lock()
					_, werr := w.Write(append(sc.Bytes(), '\n'))
					if fl != nil {
						fl.Flush()
					}
					mu.Unlock()
					if werr != nil {
						resp.Body.Close()
						return
					}
				}
				resp.Body.Close()
				if r.Context().Err() == nil {
					m.setState(i, errors.New("its event stream ended"))
				}
			}
		}()
	}
	wg.Wait()
}

// find asks each host for a session not listed yet (one its events tell
// of), and keeps who has it.
func (m *multi) find(ctx context.Context, id string) int {
	for i, h := range m.hosts {
		c, cancel := context.WithTimeout(ctx, hostTimeout)
		_, err := h.Client.Session(c, id)
		cancel()
		if err == nil {
			m.mu.Lock()
			m.owner[id] = i
			m.mu.Unlock()
			return i
		}
	}
	return -1
}

// pass sends a request on to host i as it is, and its answer back.
func (m *multi) pass(w http.ResponseWriter, r *http.Request, i int) {
	if i < 0 || i >= len(m.hosts) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(ipc.ErrorBody{Error: "no host has this session (yet): list them first", Code: ipc.CodeNotFound})
		return
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, maxPassBody+1))
	if err == nil && len(data) > maxPassBody {
		err = fmt.Errorf("a request body over %d bytes", maxPassBody)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := ipc.Request{Method: r.Method, Target: r.URL.RequestURI(), Header: textproto.MIMEHeader(r.Header.Clone())}
	for _, h := range []string{"Host", "Content-Length", "Transfer-Encoding", "Connection"} {
		req.Header.Del(h)
	}
	if len(data) > 0 {
		req.Body = data
	}
	resp, err := m.hosts[i].Client.Raw(r.Context(), req)
	if err != nil {
		m.setState(i, err)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadGateway)
		_ = json.NewEncoder(w).Encode(ipc.ErrorBody{Error: m.hosts[i].Name + ": " + err.Error(), Code: ipc.CodeUnavailable})
		return
	}
	defer resp.Body.Close()
	if recordPath.MatchString(r.URL.Path) && resp.StatusCode == http.StatusOK {
		// A record: with its host, as the listing gives it.
		var rec map[string]any
		if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&rec); err == nil {
			rec["host"] = m.hosts[i].Name
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(rec)
			return
		}
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	fl, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if fl != nil {
				fl.Flush()
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return
			}
			return
		}
	}
}
