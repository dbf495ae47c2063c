package bmcevents_test

import (
	"bytes"
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/bmckit/bmckit/bmc"
	"github.com/bmckit/bmckit/bmcevents"
)

func FuzzDecodePayload(f *testing.F) {
	for _, seed := range []string{
		eventBody,
		`{"Events":[{"EventId":1,"OriginOfCondition":"/redfish/v1/Systems/1","Severity":"OK"}]}`,
		`{"Events":[{"EventId":"a","OriginOfCondition":{"@odata.id":"https://h/redfish/v1/Managers/1"},"EventTimestamp":"2025-01-01T00:00:00"}]}`,
		`{"Events":[{"EventId":null,"Message":"\u0000\u00ff\ud800"}]}`,
		`{"Events":[]}`, `{"Events":[1]}`, `[]`, `null`, ``, `{`, `{"Events":[{}]} x`,
		`{"Events":[{"EventId":-1e999}]}`, `{"Events":[{"OriginOfCondition":{"@odata.id":5}}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := bmcevents.DecodePayload(bytes.NewReader(body), 2048)
		if err != nil {
			if len(body) > 2048 && !errors.Is(err, bmcevents.ErrBodyTooLarge) {
				t.Fatalf("oversized body: %v", err)
			}
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if len(body) > 2048 {
			t.Fatalf("accepted %d bytes over a 2048-byte limit", len(body))
		}
		if len(p.Records) == 0 || len(p.Records) > bmcevents.MaxRecords {
			t.Fatalf("%d records", len(p.Records))
		}
		keys := map[string]bool{}
		for i, r := range p.Records {
			for _, s := range []string{r.EventID, r.EventType, r.Severity, r.Message, r.MessageID, r.Origin, r.Timestamp} {
				if !utf8.ValidString(s) || len(s) > bmc.MaxLogMessage {
					t.Fatalf("unbounded or invalid string %q", s)
				}
			}
			k := bmcevents.EventKey("src", p, i)
			if len(k) > 200 || !utf8.ValidString(k) {
				t.Fatalf("key %q", k)
			}
			if k != bmcevents.EventKey("src", p, i) {
				t.Fatal("key not stable")
			}
			keys[k] = true
		}
	})
}
