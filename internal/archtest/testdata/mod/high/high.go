// Package high is a fixture: the top floor of the fixture module.
package high

// Call is a function a path may name.
func Call() {}

// Server has a method a path may name.
type Server struct{}

// Serve is a method a path may name.
func (Server) Serve() {}
