// Package drawverify is `flashctl sale draw verify`: it checks a sale's
// published draw the way anyone can (package draw's Verify): the seed
// against the commitment published at the sale's creation, the leaves
// against the root, every draw against the seed, every place against the
// draws. It reads the draw from a gateway, page by page, or from a file that
// saved it whole, and, when it reaches Redis, checks that the commitment
// served is the one in the sale's description.
package drawverify
