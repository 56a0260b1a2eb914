package pow

import (
	"crypto/sha256"
	"strconv"
)

// Solve returns the smallest nonce whose proof of challenge meets
// difficulty d, and the proof text ("<challenge>:<nonce>"). It is the
// reference solver for tests and benchmarks (the page solves in a Web
// Worker); it does about 2^d hashes.
func Solve(challenge []byte, d int) (uint64, []byte) {
	buf := make([]byte, 0, len(challenge)+1+MaxNonceDigits)
	buf = append(append(buf, challenge...), ':')
	head := len(buf)
	for n := uint64(0); ; n++ {
		p := strconv.AppendUint(buf[:head], n, 10)
		if sum := sha256.Sum256(p); LeadingZeros(&sum) >= d {
			return n, p
		}
	}
}
