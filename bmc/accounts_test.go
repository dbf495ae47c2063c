package bmc_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/bmckit/bmckit/bmc"
)

// The account types carry passwords: every way they can reach a log must
// redact them.
func TestAccountSpecAndUpdateRedactPasswords(t *testing.T) {
	const secret = "Vx9#secret-PW"
	pw := secret
	role, on := bmc.RoleOperator, true
	values := []any{
		bmc.AccountSpec{UserName: "ops", Password: secret, Role: bmc.RoleAdministrator},
		bmc.AccountUpdate{Password: &pw, Role: &role, Enabled: &on},
	}
	for _, v := range values {
		var forms []string
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
			forms = append(forms, fmt.Sprintf(verb, v))
		}
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		forms = append(forms, string(j))
		var buf bytes.Buffer
		slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "v", v)
		forms = append(forms, buf.String())
		for _, f := range forms {
			if strings.Contains(f, secret) {
				t.Errorf("%T leaks the password: %s", v, f)
			}
			if !strings.Contains(f, "redacted") {
				t.Errorf("%T does not show the password was there (redacted): %s", v, f)
			}
		}
	}
	// What is not secret stays readable.
	if s := fmt.Sprint(values[1]); !strings.Contains(s, "Role:Operator") || !strings.Contains(s, "Enabled:true") {
		t.Errorf("AccountUpdate prints %s; want the role and enabled shown", s)
	}
}

func TestAccountSpecAndUpdateValidate(t *testing.T) {
	empty := ""
	noRole := bmc.Role("")
	for _, tc := range []struct {
		err  error
		want string
	}{
		{bmc.AccountSpec{Password: "x", Role: bmc.RoleReadOnly}.Validate(), "UserName"},
		{bmc.AccountSpec{UserName: "a", Role: bmc.RoleReadOnly}.Validate(), "Password"},
		{bmc.AccountSpec{UserName: "a", Password: "x"}.Validate(), "Role"},
		{bmc.AccountUpdate{}.Validate(), "changes nothing"},
		{bmc.AccountUpdate{Password: &empty}.Validate(), "Password is empty"},
		{bmc.AccountUpdate{Role: &noRole}.Validate(), "Role is empty"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("Validate = %v, want an error naming %q", tc.err, tc.want)
		}
	}
	if err := (bmc.AccountSpec{UserName: "a", Password: "x", Role: "CustomRole2"}).Validate(); err != nil {
		t.Errorf("a BMC's own role id is refused: %v", err)
	}
}
