package session

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"sort"
	"sync"
	"time"
)

// Limits bound what a manager will run.
type Limits struct {
	MaxSessions int           // live sessions at once
	IdleTimeout time.Duration // a session with no input for this long is closed; 0 = never
	CloseGrace  time.Duration // between the steps of closing a session
	Scrollback  int           // lines of history per session
	MaxExited   int           // exited sessions kept readable before the oldest is dropped
}

// DefaultLimits returns the limits used where a field is zero.
func DefaultLimits() Limits {
	return Limits{
		MaxSessions: 32,
		IdleTimeout: 30 * time.Minute,
		CloseGrace:  500 * time.Millisecond,
		Scrollback:  DefaultScrollback,
		MaxExited:   32,
	}
}

// ErrTooManySessions is returned by Start when MaxSessions are live.
var ErrTooManySessions = errors.New("too many sessions")

// ErrNotFound is returned for an unknown session id or name.
var ErrNotFound = errors.New("no such session")

// Manager owns sessions: it starts them, finds them by id or name, closes
// idle ones, and closes them all on shutdown. Its one goroutine (the idle
// reaper) stops in Shutdown.
type Manager struct {
	limits Limits

	mu       sync.Mutex
	sessions map[string]*Session
	order    []string // ids, oldest first
	shutdown bool

	stop   chan struct{}
	reaped chan struct{}
	// OnIdleClose, if set, is called after the reaper closes a session.
	onIdle func(*Session)
	// onPanic is told about panics recovered in session goroutines.
	onPanic PanicFunc
	// onForget is told the id of each session the manager drops.
	onForget func(id string)
}

// NewManager returns a manager with the given limits (zero fields take the
// defaults) and starts its idle reaper. onIdle may be nil.
func NewManager(l Limits, onIdle func(*Session)) *Manager {
	defaultLimits := DefaultLimits()
	if l.MaxSessions <= 0 {
		l.MaxSessions = defaultLimits.MaxSessions
	}
	if l.CloseGrace <= 0 {
		l.CloseGrace = defaultLimits.CloseGrace
	}
	if l.Scrollback <= 0 {
		l.Scrollback = defaultLimits.Scrollback
	}
	if l.MaxExited <= 0 {
		l.MaxExited = defaultLimits.MaxExited
	}
	m := &Manager{
		limits:   l,
		sessions: map[string]*Session{},
		stop:     make(chan struct{}),
		reaped:   make(chan struct{}),
		onIdle:   onIdle,
	}
	go m.reapIdle()
	return m
}

// Limits returns the manager's limits.
func (m *Manager) Limits() Limits { return m.limits }

// Start starts a session. argv[0] is looked up in PATH (of spec.Env when it
// sets one); a program that does not exist is an error and starts nothing.
func (m *Manager) Start(spec Spec) (*Session, error) {
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return nil, errors.New("no command given")
	}
	path, err := lookPath(spec.Argv[0], spec.Env)
	if err != nil {
		return nil, err
	}
	spec.Argv = append([]string{path}, spec.Argv[1:]...)
	if spec.Scrollback <= 0 {
		spec.Scrollback = m.limits.Scrollback
	}
	m.mu.Lock()
	if m.shutdown {
		m.mu.Unlock()
		return nil, errors.New("server is shutting down")
	}
	live := 0
	for _, s := range m.sessions {
		if !s.Closed() && !s.exitedNow() {
			live++
		}
		if spec.Name != "" && s.spec.Name == spec.Name && !s.Closed() {
			m.mu.Unlock()
			return nil, fmt.Errorf("a session named %q exists (id %s)", spec.Name, s.id)
		}
	}
	if live >= m.limits.MaxSessions {
		m.mu.Unlock()
		return nil, fmt.Errorf("%w: %d live sessions, the limit is %d (close one, or raise --max-sessions)", ErrTooManySessions, live, m.limits.MaxSessions)
	}
	id := newID()
	if spec.OnPanic == nil {
		spec.OnPanic = m.onPanic
	}
	m.mu.Unlock()

	s, err := start(id, spec)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.sessions[id] = s
	m.order = append(m.order, id)
	m.mu.Unlock()
	m.dropOldExited()
	return s, nil
}

func (s *Session) exitedNow() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exited
}

// dropOldExited forgets the oldest exited sessions beyond MaxExited.
func (m *Manager) dropOldExited() {
	m.mu.Lock()
	var exited []*Session
	for _, id := range m.order {
		if s := m.sessions[id]; s.exitedNow() || s.Closed() {
			exited = append(exited, s)
		}
	}
	var drop []*Session
	if n := len(exited) - m.limits.MaxExited; n > 0 {
		drop = exited[:n]
		for _, s := range drop {
			m.removeLocked(s.id)
		}
	}
	forget := m.onForget
	m.mu.Unlock()
	for _, s := range drop {
		_ = s.Close(context.Background(), m.limits.CloseGrace)
		if forget != nil {
			forget(s.id)
		}
	}
}

func (m *Manager) removeLocked(id string) {
	delete(m.sessions, id)
	for i, o := range m.order {
		if o == id {
			m.order = append(m.order[:i], m.order[i+1:]...)
			break
		}
	}
}

func lookPath(name string, env []string) (string, error) {
	if filepath.IsAbs(name) || filepath.Base(name) != name {
		p, err := exec.LookPath(name)
		if err != nil {
			return "", fmt.Errorf("command not found: %s", name)
		}
		return filepath.Abs(p)
	}
	if path := lookupEnv(env, "PATH"); path != "" {
		for _, dir := range filepath.SplitList(path) {
			if dir == "" {
				continue
			}
			if p, err := exec.LookPath(filepath.Join(dir, name)); err == nil {
				return filepath.Abs(p)
			}
		}
		return "", fmt.Errorf("command not found: %s", name)
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("command not found: %s", name)
	}
	return filepath.Abs(p)
}

func newID() string {
	return "s-" + rand.Text()[:10]
}

// Get returns a session by id or name.
func (m *Manager) Get(idOrName string) (*Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.sessions[idOrName]; ok {
		return s, nil
	}
	for _, id := range m.order {
		if s := m.sessions[id]; s.spec.Name == idOrName && idOrName != "" {
			return s, nil
		}
	}
	return nil, fmt.Errorf("%w: %q (session_list shows the open ones)", ErrNotFound, idOrName)
}

// List returns the sessions, oldest first.
func (m *Manager) List() []*Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*Session, 0, len(m.order))
	for _, id := range m.order {
		out = append(out, m.sessions[id])
	}
	return out
}

// Close closes a session. A closed session stays listed (as closed) until
// MaxExited newer ones push it out, so that closing twice is not an error.
func (m *Manager) Close(ctx context.Context, idOrName string) error {
	s, err := m.Get(idOrName)
	if err != nil {
		return err
	}
	err = s.Close(ctx, m.limits.CloseGrace)
	m.dropOldExited()
	return err
}

// Shutdown stops the reaper and closes every session in parallel.
func (m *Manager) Shutdown(ctx context.Context) error {
	m.mu.Lock()
	if !m.shutdown {
		m.shutdown = true
		close(m.stop)
	}
	all := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		all = append(all, s)
	}
	m.mu.Unlock()
	<-m.reaped
	var wg sync.WaitGroup
	errs := make([]error, len(all))
	for i, s := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.Close(ctx, m.limits.CloseGrace)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (m *Manager) reapIdle() {
	defer close(m.reaped)
	if m.limits.IdleTimeout <= 0 {
		<-m.stop
		return
	}
	tick := min(max(m.limits.IdleTimeout/4, 50*time.Millisecond), 10*time.Second)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
		m.reapOnce()
	}
}

// reapOnce closes the sessions idle for too long. A panic here is
// reported and the reaper goes on.
func (m *Manager) reapOnce() {
	defer func() {
		if v := recover(); v != nil {
			m.mu.Lock()
			f := m.onPanic
			m.mu.Unlock()
			reportPanic(f, "", "idle reaper", v, debug.Stack())
		}
	}()
	for _, s := range m.idle() {
		_ = s.Close(context.Background(), m.limits.CloseGrace)
		if m.onIdle != nil {
			m.onIdle(s)
		}
	}
}

// idle returns the sessions past their idle timeout, oldest first.
func (m *Manager) idle() []*Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	var idle []*Session
	for _, s := range m.sessions {
		if !s.Closed() && s.Idle() >= m.limits.IdleTimeout {
			idle = append(idle, s)
		}
	}
	sort.Slice(idle, func(i, j int) bool { return idle[i].started.Before(idle[j].started) })
	return idle
}

// OnPanic sets the handler told about panics recovered in the goroutines
// of sessions started from now on that have none of their own (see
// Spec.OnPanic), and in the manager's own. Nil restores the default: the
// slog default logger.
func (m *Manager) OnPanic(f PanicFunc) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.onPanic = f
}

// OnForget sets a function told the id of each session the manager drops
// (an exited or closed session pushed out by MaxExited newer ones), so that
// what the caller keeps per session (a recording's tap, an unfinished
// line) can go with it. Nil: none.
func (m *Manager) OnForget(f func(id string)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.onForget = f
}
