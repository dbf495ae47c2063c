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
	refs map[string]*CredentialsPair
}

var _ CredentialsStore = (*MemoryCredentials)(nil)

// NewMemoryCredentials returns a store whose current credentials are m's
// (copied), none pending.
func NewMemoryCredentials(m map[string]Credentials) *MemoryCredentials {
	s := &MemoryCredentials{refs: make(map[string]*CredentialsPair, len(m))}
	for ref, c := range m {
		s.refs[ref] = &CredentialsPair{Current: c}
	}
	return s
}

// Set makes c the current credentials of ref, dropping any pending set
// (an operator's change).
func (s *MemoryCredentials) Set(ref string, c Credentials) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refs[ref] = &CredentialsPair{Current: c}
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
	return p.SetPending(ref, c)
}

// Promote implements [CredentialsStore].
func (s *MemoryCredentials) Promote(_ context.Context, ref string, c Credentials) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.get(ref)
	if err != nil {
		return err
	}
	_, err = p.Promote(ref, c)
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
	_, err = p.DropPending(ref, c)
	return err
}

func (s *MemoryCredentials) get(ref string) (*CredentialsPair, error) {
	p, ok := s.refs[ref]
	if !ok {
		return nil, fmt.Errorf("no credentials named %q", ref)
	}
	return p, nil
}
