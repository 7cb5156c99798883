//go:build !linux

package control

import (
	"errors"
	"net"
)

// peerCred is only implemented on Linux; elsewhere every client is refused.
func peerCred(*net.UnixConn) (pid, uid int, err error) {
	return 0, 0, errors.New("peer credentials are not supported on this system")
}
