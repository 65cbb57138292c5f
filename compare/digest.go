package compare

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
)

// Digest identifies a response without holding it: responses may hold personal data,
// and verdicts become decision events and status entries. It is the response's length
// in bytes and the first 16 hex digits of its HMAC-SHA-256 under a key the process
// draws when it starts. Two digests of one process are equal exactly when the responses
// are (but for a 2^-64 chance); a digest cannot be tested against a guessed text, nor
// compared with another process's.
type Digest struct {
	Length int    `json:"length"`
	HMAC   string `json:"hmac"`
}

var digestKey = rand.Text()

// digest is response's Digest.
func digest(response string) Digest {
	mac := hmac.New(sha256.New, []byte(digestKey))
	mac.Write([]byte(response))
	return Digest{Length: len(response), HMAC: hex.EncodeToString(mac.Sum(nil)[:8])}
}
