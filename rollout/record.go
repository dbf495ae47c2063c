package rollout

import (
	"encoding/json"
	"fmt"
	"time"
)

// Rollout is a rollout as stored: its spec, what was asked of it and its
// status.
type Rollout struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"createdAt"`
	Spec      Spec      `json:"spec"`
	Control   Control   `json:"control"`
	Status    Status    `json:"status"`
}

// The Store keeps a rollout in two records (docs/rollouts.md, "Durable and
// shared"): the spec, written once, and the control and status, rewritten
// by every pass. Both are plain JSON.

// stateRecord is <prefix>rollouts/<name>.
type stateRecord struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"createdAt"`
	Control   Control   `json:"control"`
	Status    Status    `json:"status"`
}

// specRecord is <prefix>rolloutspecs/<name>.
type specRecord struct {
	Name string `json:"name"`
	Spec Spec   `json:"spec"`
}

func decodeState(key string, b []byte) (*stateRecord, error) {
	var r stateRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("rollout: decoding %s: %w", key, err)
	}
	return &r, nil
}

func decodeSpec(key string, b []byte) (*specRecord, error) {
	var r specRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("rollout: decoding %s: %w", key, err)
	}
	return &r, nil
}
