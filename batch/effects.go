package batch

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// defaultEffectKey names a row's effect by its place: the same on every
// attempt and after any reclaim.
func defaultEffectKey(tenant string, batchID, rowNo int64) string {
	return fmt.Sprintf("%s/%d/%d", tenant, batchID, rowNo)
}

// valuesDigest is the SHA-256 of a row's cells: an effect key claimed
// again with other cells is a key reused, not a duplicate.
func valuesDigest(values []string) string {
	b, _ := json.Marshal(values) // a []string always marshals
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
