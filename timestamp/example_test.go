package timestamp_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/bmckit/bmckit/timestamp"
)

// A timestamp.Time encodes exactly as a time.Time does, so status structs
// that hold one read and write as plain RFC 3339 strings.
func ExampleTime() {
	type status struct {
		StartTime *timestamp.Time `json:"startTime,omitempty"`
		EndTime   *timestamp.Time `json:"endTime,omitempty"`
	}
	t := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	out, _ := json.Marshal(status{StartTime: timestamp.Ptr(t)})
	fmt.Println(string(out))

	var back status
	if err := json.Unmarshal(out, &back); err != nil {
		panic(err)
	}
	fmt.Println(back.StartTime.Equal(t), back.EndTime == nil)
	// Output:
	// {"startTime":"2026-01-02T03:04:05Z"}
	// true true
}
