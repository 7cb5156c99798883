package config

import (
	"fmt"
	"maps"
	"os"
	"slices"
)

// CheckFiles reports, as Errors naming file:line:col and
// agent.X.component, each agent whose component file does not exist or is
// not a regular file. Parse does not look at the file system (a config may
// be checked where its components are not); config validate does, so that
// a config it says ok for loads its agents. serve starts such an agent as
// failed, its reason shown by ps.
func (c *Config) CheckFiles() error {
	var errs Errors
	for _, name := range slices.Sorted(maps.Keys(c.Agent)) {
		path := c.Agent[name].Component
		fi, err := os.Stat(path)
		var msg string
		switch {
		case err != nil && os.IsNotExist(err):
			msg = fmt.Sprintf("component file %s does not exist (build it with toolhostd build, or fix the path; a relative path is from the config's directory)", path)
		case err != nil:
			msg = fmt.Sprintf("component file %s: %v", path, err)
		case !fi.Mode().IsRegular():
			msg = fmt.Sprintf("component %s is not a file", path)
		default:
			continue
		}
		p := c.componentAt[name]
		errs = append(errs, &Error{File: c.Path, Line: p.line, Col: p.col, Key: displayPath([]string{"agent", name, "component"}), Msg: msg})
	}
	if len(errs) == 0 {
		return nil
	}
	slices.SortStableFunc(errs, func(a, b *Error) int { return a.Line - b.Line })
	return errs
}
