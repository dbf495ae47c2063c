package bmc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// FileCredentials is a [CredentialsStore] in one JSON file, for hosts
// without a vault or a Kubernetes Secret. Every change rewrites the whole
// file: a temporary file in the same directory, fsynced, renamed over the
// old one, then the directory fsynced, so a crash leaves the old file or
// the new one, never a torn one. The file's mode is 0600. It is read again
// on every call, so an operator's edit is seen at the next dial.
//
// One process writes the file (it is not locked across processes); safe
// for concurrent use within it. The format:
//
//	{"credentials": {"<ref>": {"current": {"username": "...", "password": "..."},
//	                           "pending": {"username": "...", "password": "..."}}}}
type FileCredentials struct {
	path string
	mu   sync.Mutex
}

var _ CredentialsStore = (*FileCredentials)(nil)

// credentialsFile is the file's JSON. (Credentials marshal redacted: the
// file has its own types.)
type credentialsFile struct {
	Credentials map[string]fileCredentialsPair `json:"credentials"`
}

type fileCredentialsPair struct {
	Current filePassword  `json:"current"`
	Pending *filePassword `json:"pending,omitempty"`
}

type filePassword struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// OpenFileCredentials returns the store in the file at path, creating the
// file (empty, mode 0600) when it does not exist. A file that does not
// decode is an error naming the field.
func OpenFileCredentials(path string) (*FileCredentials, error) {
	s := &FileCredentials{path: path}
	if _, err := s.load(); errors.Is(err, fs.ErrNotExist) {
		return s, s.save(map[string]*CredentialsPair{})
	} else if err != nil {
		return nil, err
	}
	return s, nil
}

// Path is the file's path.
func (s *FileCredentials) Path() string { return s.path }

// Set makes c the current credentials of ref, dropping any pending set
// (an operator's change, or a host enrolling a BMC).
func (s *FileCredentials) Set(_ context.Context, ref string, c Credentials) error {
	return s.update(ref, true, func(p *CredentialsPair) (bool, error) {
		*p = CredentialsPair{Current: c}
		return true, nil
	})
}

// Resolve implements [CredentialsResolver]: the current credentials.
func (s *FileCredentials) Resolve(_ context.Context, ref string) (Credentials, error) {
	p, err := s.pair(ref)
	if err != nil {
		return Credentials{}, err
	}
	return p.Current, nil
}

// Pending implements [CredentialsStore].
func (s *FileCredentials) Pending(_ context.Context, ref string) (Credentials, bool, error) {
	p, err := s.pair(ref)
	if err != nil || p.Pending == nil {
		return Credentials{}, false, err
	}
	return *p.Pending, true, nil
}

// SetPending implements [CredentialsStore]: durable (fsynced) when it
// returns.
func (s *FileCredentials) SetPending(_ context.Context, ref string, c Credentials) error {
	return s.update(ref, false, func(p *CredentialsPair) (bool, error) { return true, p.SetPending(ref, c) })
}

// Promote implements [CredentialsStore].
func (s *FileCredentials) Promote(_ context.Context, ref string, c Credentials) error {
	return s.update(ref, false, func(p *CredentialsPair) (bool, error) { return p.Promote(ref, c) })
}

// DropPending implements [CredentialsStore].
func (s *FileCredentials) DropPending(_ context.Context, ref string, c Credentials) error {
	return s.update(ref, false, func(p *CredentialsPair) (bool, error) { return p.DropPending(ref, c) })
}

func (s *FileCredentials) pair(ref string) (*CredentialsPair, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.load()
	if err != nil {
		return nil, err
	}
	p, ok := m[ref]
	if !ok {
		return nil, fmt.Errorf("no credentials named %q in %s", ref, s.path)
	}
	return p, nil
}

// update applies change to ref's pair (a new one when create) and writes
// the file when it reports a change.
func (s *FileCredentials) update(ref string, create bool, change func(*CredentialsPair) (bool, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.load()
	if err != nil {
		return err
	}
	p, ok := m[ref]
	if !ok {
		if !create {
			return fmt.Errorf("no credentials named %q in %s", ref, s.path)
		}
		p = &CredentialsPair{}
		m[ref] = p
	}
	changed, err := change(p)
	if err != nil || !changed {
		return err
	}
	return s.save(m)
}

func (s *FileCredentials) load() (map[string]*CredentialsPair, error) {
	data, err := os.ReadFile(s.path)
	if err != nil {
		return nil, err
	}
	return decodeCredentialsFile(data, s.path)
}

// decodeCredentialsFile decodes the file's JSON; the error names the file
// and the field, never a value.
func decodeCredentialsFile(data []byte, path string) (map[string]*CredentialsPair, error) {
	var f credentialsFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, fmt.Errorf("credentials file %s: not JSON (at byte %d)", path, se.Offset)
		case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
			return nil, fmt.Errorf("credentials file %s: not JSON (it ends early)", path)
		case errors.As(err, &te):
			return nil, fmt.Errorf("credentials file %s: field %q holds a JSON %s, want a %s", path, te.Field, te.Value, te.Type)
		}
		// An unknown field: encoding/json names it, and only it.
		return nil, fmt.Errorf("credentials file %s: %w", path, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("credentials file %s: data after the JSON object", path)
	}
	m := make(map[string]*CredentialsPair, len(f.Credentials))
	for ref, p := range f.Credentials {
		if p.Current.Username == "" {
			return nil, fmt.Errorf("credentials file %s: credentials.%q.current.username is empty", path, ref)
		}
		cp := &CredentialsPair{Current: Credentials(p.Current)}
		if p.Pending != nil {
			if p.Pending.Username == "" || p.Pending.Password == "" {
				return nil, fmt.Errorf("credentials file %s: credentials.%q.pending: the username and the password must not be empty", path, ref)
			}
			c := Credentials(*p.Pending)
			cp.Pending = &c
		}
		m[ref] = cp
	}
	return m, nil
}

// save writes m: temporary file, fsync, rename, directory fsync.
func (s *FileCredentials) save(m map[string]*CredentialsPair) error {
	f := credentialsFile{Credentials: make(map[string]fileCredentialsPair, len(m))}
	for ref, p := range m {
		fp := fileCredentialsPair{Current: filePassword(p.Current)}
		if p.Pending != nil {
			pp := filePassword(*p.Pending)
			fp.Pending = &pp
		}
		f.Credentials[ref] = fp
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding credentials file %s: %w", s.path, err)
	}
	dir := filepath.Dir(s.path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(s.path)+".*")
	if err != nil {
		return fmt.Errorf("writing credentials file %s: %w", s.path, err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename: no such file
	err = tmp.Chmod(0o600)
	if err == nil {
		_, err = tmp.Write(append(data, '\n'))
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), s.path)
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("writing credentials file %s: %w", s.path, err)
	}
	return nil
}

// syncDir fsyncs directory dir, so that a rename in it is durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
