package control_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/toolhostd/toolhostd/internal/control"
)

// envClient makes the test binary a control client of the socket it names
// (run under another uid by TestNonOwnerRefused).
const envClient = "CONTROL_TEST_CLIENT_SOCKET"

// Exit codes of the client mode.
const (
	clientOK           = 0
	clientUnauthorized = 3
	clientNotRunning   = 4
	clientOther        = 5
)

func TestMain(m *testing.M) {
	if sock := os.Getenv(envClient); sock != "" {
		os.Exit(runClient(sock))
	}
	goleak.VerifyTestMain(m)
}

// runClient lists the agents over sock and reports the result as an exit
// code, printing the error.
func runClient(sock string) int {
	c, err := control.Dial(sock)
	if err == nil {
		defer c.Close()
		_, err = c.Agents(context.Background())
	}
	fmt.Printf("uid=%d err=%v\n", os.Getuid(), err)
	switch {
	case err == nil:
		return clientOK
	case errors.Is(err, control.ErrUnauthorized):
		return clientUnauthorized
	case errors.Is(err, control.ErrNotRunning):
		return clientNotRunning
	}
	return clientOther
}
