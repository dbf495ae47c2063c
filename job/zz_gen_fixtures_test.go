package job

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGenLegacyFixtures(t *testing.T) {
	if os.Getenv("GEN_FIXTURES") == "" {
		t.Skip()
	}
	for name, j := range stateJobs(t) {
		rec, err := marshalRecord(j)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		fn := strings.NewReplacer(" ", "-", ",", "").Replace(name)
		if err := os.WriteFile(filepath.Join("testdata/records-v0", fn+".json"), append(rec, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("testdata/records-v0", fn+".want.json"), append(want, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
