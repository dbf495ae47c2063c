package bmc_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bmckit/bmckit/bmc"
)

const secretPW = "pw-7f3a9c-do-not-print"

func TestCredentialsNeverPrintThePassword(t *testing.T) {
	c := bmc.Credentials{Username: "admin", Password: secretPW}
	type wrapper struct {
		Creds bmc.Credentials
		Ptr   *bmc.Credentials
	}
	w := wrapper{Creds: c, Ptr: &c}

	outputs := map[string]string{}
	for _, verb := range []string{"%v", "%+v", "%s", "%q", "%#v", "%x", "%X", "%d", "%10v", "%-20s"} {
		outputs["Sprintf "+verb] = fmt.Sprintf(verb, c)
		outputs["Sprintf ptr "+verb] = fmt.Sprintf(verb, &c)
		outputs["Sprintf nested "+verb] = fmt.Sprintf(verb, w)
	}
	outputs["Sprint"] = fmt.Sprint(c)
	outputs["Sprintln"] = fmt.Sprintln(c)
	outputs["String"] = c.String()
	outputs["GoString"] = c.GoString()
	outputs["Errorf"] = fmt.Errorf("dial with %v: %w", c, assert.AnError).Error()

	b, err := json.Marshal(c)
	require.NoError(t, err)
	outputs["json"] = string(b)
	b, err = json.Marshal(w)
	require.NoError(t, err)
	outputs["json nested"] = string(b)

	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	log.Info("dialing", "creds", c, "ptr", &c, "nested", w)
	log.Info("group", slog.Any("creds", c))
	outputs["slog json"] = buf.String()
	var tbuf bytes.Buffer
	slog.New(slog.NewTextHandler(&tbuf, nil)).Info("dialing", "creds", c)
	outputs["slog text"] = tbuf.String()

	for name, out := range outputs {
		assert.NotContains(t, out, secretPW, name)
		assert.NotContains(t, out, "7f3a9c", name)
	}
	// The username is still there, so the output stays useful.
	assert.Contains(t, outputs["Sprintf %v"], "admin")
	assert.Contains(t, outputs["Sprintf %#v"], `bmc.Credentials{Username:"admin"`)
	assert.JSONEq(t, `{"username":"admin","password":"<redacted>"}`, outputs["json"])
	assert.Contains(t, outputs["slog json"], `"creds":{"username":"admin","password":"<redacted>"}`)
}
