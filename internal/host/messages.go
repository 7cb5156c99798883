package host

import (
	"fmt"

	wt "github.com/toolhostd/toolhostd/internal/wasmtime"
)

// defineMessages is toolhost:agent@0.3.0's messages interface, one to one
// onto the agent's contract (package contract's messages.go).
func defineMessages(root *wt.LinkerInstance, iface string) error {
	li, err := root.Instance(iface)
	if err != nil {
		return err
	}
	reply := func(f func(st *agentState, id, text string) error) wt.HostFunc {
		return func(c *wt.Caller, args []wt.Val, results []wt.Val) error {
			id, text, err := twoStrings(args)
			if err != nil {
				return err
			}
			if err := f(stateOf(c), id, text); err != nil {
				results[0] = errResult(err)
				return nil
			}
			results[0] = wt.Ok(nil)
			return nil
		}
	}
	return addFuncs(li, map[string]wt.HostFunc{
		"reply-delta": reply(func(st *agentState, id, text string) error { return st.pa.ReplyDelta(id, text) }),
		"reply":       reply(func(st *agentState, id, text string) error { return st.pa.Reply(id, text) }),
		"reply-error": reply(func(st *agentState, id, text string) error { return st.pa.ReplyError(id, text) }),
		"send": func(c *wt.Caller, args []wt.Val, results []wt.Val) error {
			if len(args) != 3 {
				return fmt.Errorf("%w: send takes three arguments", errBadArgs)
			}
			to, content, err := twoStrings(args[:2])
			if err != nil {
				return err
			}
			opt, ok := args[2].(wt.Option)
			if !ok {
				return fmt.Errorf("%w: send's session is not an option", errBadArgs)
			}
			var session *string
			if opt.Some != nil {
				s, ok := opt.Some.(wt.String)
				if !ok {
					return fmt.Errorf("%w: send's session is not a string", errBadArgs)
				}
				v := string(s)
				session = &v
			}
			id, err := stateOf(c).pa.Send(to, content, session)
			if err != nil {
				results[0] = errResult(err)
				return nil
			}
			results[0] = wt.Ok(wt.String(id))
			return nil
		},
		"is-open": func(c *wt.Caller, args []wt.Val, results []wt.Val) error {
			id, err := argString(args, 0)
			if err != nil {
				return err
			}
			results[0] = wt.Bool(stateOf(c).pa.MessageIsOpen(id))
			return nil
		},
		"cancel": func(c *wt.Caller, args []wt.Val, results []wt.Val) error {
			id, err := argString(args, 0)
			if err != nil {
				return err
			}
			results[0] = wt.Bool(stateOf(c).pa.CancelMessage(id))
			return nil
		},
	})
}
