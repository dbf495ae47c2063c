package bmctest

import (
	"errors"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

func (s *suite) dial(t *testing.T, path string) {
	s.run(t, path, "WrongPassword", func(tc *tcase) {
		creds := tc.dialer()
		creds.Password = wrongPassword(creds, tc.opts.MaxPassword)
		tc.wantUnauthorized(creds)
	})
	s.run(t, path, "WrongUser", func(tc *tcase) {
		creds := tc.dialer()
		creds.Username = unknownUser(creds, tc.opts.MaxUsername)
		tc.wantUnauthorized(creds)
	})
	s.run(t, path, "Again", func(tc *tcase) {
		creds := tc.dialer()
		d, err := tc.target.Dial(tc.ctx(), creds)
		tc.noErr("Dial with the good credentials", err)
		defer func() { tc.noErr("Close", d.Close(tc.ctx())) }()
		_, err = d.PowerState(tc.ctx())
		tc.noErr("PowerState on the second driver", err)
	})
}

// dialer skips unless the target can dial, and returns the good credentials.
func (tc *tcase) dialer() bmc.Credentials {
	tc.Helper()
	if tc.target.Dial == nil {
		tc.Skip("Target.Dial is not set")
	}
	if tc.target.Credentials.Password == "" && tc.target.Credentials.Username == "" {
		tc.Skip("Target.Credentials is not set (a peer that accepts anyone)")
	}
	return tc.target.Credentials
}

func (tc *tcase) wantUnauthorized(creds bmc.Credentials) {
	tc.Helper()
	d, err := tc.target.Dial(tc.ctx(), creds)
	if err == nil {
		// Some protocols only authenticate on the first request.
		_, err = d.PowerState(tc.ctx())
		_ = d.Close(tc.ctx())
	}
	if err == nil {
		tc.Fatalf("Dial and PowerState as %q with wrong credentials succeeded", creds.Username)
	}
	if !errors.Is(err, bmc.ErrUnauthorized) {
		tc.Errorf("wrong credentials: error %q does not wrap bmc.ErrUnauthorized", err)
	}
	if bmc.IsTransient(err) {
		tc.Errorf("wrong credentials: error %q is classified transient; want permanent", err)
	}
	tc.requireOpError("wrong credentials", err)
}
