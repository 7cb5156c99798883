package idem

import "errors"

var (
	// ErrNotMember: this host has no member key, so it cannot claim a key
	// (not joined yet, or fenced).
	ErrNotMember = errors.New("not a member of the cluster")
	// ErrContended: the key's record kept changing while claiming it.
	ErrContended = errors.New("contended")
)
