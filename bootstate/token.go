package bootstate

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
)

// MinSecretLen is the shortest secret [Config.Secret] accepts, in bytes.
const MinSecretLen = 16

// tokenFor computes the per-boot token: HMAC-SHA256 over the lower-case
// system UUID and the attempt ID (separated by a NUL byte, which neither may
// contain), base64url-encoded without padding (43 characters, safe in URLs,
// kernel command lines and JSON).
func tokenFor(secret []byte, systemUUID, attemptID string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(systemUUID))
	m.Write([]byte{0})
	m.Write([]byte(attemptID))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// tokenValid compares in constant time.
func tokenValid(secret []byte, systemUUID, attemptID, token string) bool {
	want := tokenFor(secret, systemUUID, attemptID)
	return hmac.Equal([]byte(want), []byte(token))
}
