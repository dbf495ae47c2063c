package bmc

import (
	"context"
	"fmt"
	"sync"
)

// MemoryCredentials is a [CredentialsStore] in memory, for tests and
// examples: nothing survives the process. Safe for concurrent use.
type MemoryCredentials struct {
	mu   sync.Mutex
	refs map[string]*credentialsPair
}

// credentialsPair is what a CredentialsStore holds for one reference.
type credentialsPair struct {
	Current Credentials
	Pending *Credentials
}

var _ CredentialsStore = (*MemoryCredentials)(nil)

// NewMemoryCredentials returns a store whose current credentials are m's
// (copied), none pending.
func NewMemoryCredentials(m map[string]Credentials) *MemoryCredentials {
	s := &MemoryCredentials{refs: make(map[string]*credentialsPair, len(m))}
	for ref, c := range m {
		s.refs[ref] = &credentialsPair{Current: c}
	}
	return s
}

// Set makes c the current credentials of ref, dropping any pending set
// (an operator's change).
func (s *MemoryCredentials) Set(ref string, c Credentials) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refs[ref] = &credentialsPair{Current: c}
}

// Resolve implements [CredentialsResolver]: the current credentials.
func (s *MemoryCredentials) Resolve(_ context.Context, ref string) (Credentials, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.get(ref)
	if err != nil {
		return Credentials{}, err
	}
	return p.Current, nil
}

// Pending implements [CredentialsStore].
func (s *MemoryCredentials) Pending(_ context.Context, ref string) (Credentials, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.get(ref)
	if err != nil || p.Pending == nil {
		return Credentials{}, false, err
	}
	return *p.Pending, true, nil
}

// SetPending implements [CredentialsStore].
func (s *MemoryCredentials) SetPending(_ context.Context, ref string, c Credentials) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.get(ref)
	if err != nil {
		return err
	}
	return p.setPending(ref, c)
}

// Promote implements [CredentialsStore].
func (s *MemoryCredentials) Promote(_ context.Context, ref string, c Credentials) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.get(ref)
	if err != nil {
		return err
	}
	_, err = p.promote(ref, c)
	return err
}

// DropPending implements [CredentialsStore].
func (s *MemoryCredentials) DropPending(_ context.Context, ref string, c Credentials) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.get(ref)
	if err != nil {
		return err
	}
	_, err = p.drop(ref, c)
	return err
}

func (s *MemoryCredentials) get(ref string) (*credentialsPair, error) {
	p, ok := s.refs[ref]
	if !ok {
		return nil, fmt.Errorf("no credentials named %q", ref)
	}
	return p, nil
}

// The rules every store applies to one reference's pair (shared by the
// memory and file stores). changed reports whether p changed.

func (p *credentialsPair) setPending(ref string, c Credentials) error {
	if c.Username == "" || c.Password == "" {
		return fmt.Errorf("pending credentials of %q: the user name and the password must not be empty", ref)
	}
	p.Pending = &c
	return nil
}

func (p *credentialsPair) promote(ref string, c Credentials) (changed bool, err error) {
	switch {
	case p.Pending != nil && *p.Pending == c:
		p.Current, p.Pending = c, nil
		return true, nil
	case p.Pending == nil && p.Current == c:
		return false, nil
	}
	return false, fmt.Errorf("promoting credentials of %q (user %q): %w", ref, c.Username, ErrPendingMismatch)
}

func (p *credentialsPair) drop(ref string, c Credentials) (changed bool, err error) {
	switch {
	case p.Pending == nil:
		return false, nil
	case *p.Pending == c:
		p.Pending = nil
		return true, nil
	}
	return false, fmt.Errorf("dropping the pending credentials of %q (user %q): %w", ref, c.Username, ErrPendingMismatch)
}
