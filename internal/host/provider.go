package host

import (
	"fmt"

	"github.com/toolhostd/toolhostd/internal/contract"
	"github.com/toolhostd/toolhostd/internal/provider"
	wt "github.com/toolhostd/toolhostd/internal/wasmtime"
)

// providerMethod adapts a provider method body to a HostFunc.
func providerMethod(body func(st *agentState, ph *contract.ProviderHandle, args []wt.Val) (wt.Val, error)) wt.HostFunc {
	return methodOf(func(st *agentState, args []wt.Val) (*contract.ProviderHandle, error) {
		return selfArg(st.handles.provs, providerType, "provider", args)
	}, body)
}

// requestOf lifts the one chat-request argument of chat and chat-stream.
func requestOf(args []wt.Val) (provider.Request, error) {
	if len(args) != 1 {
		return provider.Request{}, fmt.Errorf("%w: a chat method takes one request", errBadArgs)
	}
	return chatRequestFrom(args[0])
}

// defineProvider puts the provider interface (0.2.0) into root.
func defineProvider(root *wt.LinkerInstance, iface string) error {
	li, err := root.Instance(iface)
	if err != nil {
		return err
	}
	dtor := func(c *wt.Caller, rep uint32) error {
		st := stateOf(c)
		if ph, ok := st.handles.provs[rep]; ok {
			ph.Close()
			delete(st.handles.provs, rep)
		}
		return nil
	}
	if err := li.AddResource("provider", providerType, dtor); err != nil {
		return err
	}
	return addFuncs(li, map[string]wt.HostFunc{
		"get": func(c *wt.Caller, args []wt.Val, results []wt.Val) error {
			st := stateOf(c)
			name, err := argString(args, 0)
			if err != nil {
				return err
			}
			ph, err := st.pa.GetProvider(name)
			if err != nil {
				results[0] = errResult(err)
				return nil
			}
			results[0] = wt.Ok(keep(st, st.handles.provs, providerType, ph))
			return nil
		},
		"[method]provider.kind": providerMethod(func(_ *agentState, ph *contract.ProviderHandle, _ []wt.Val) (wt.Val, error) {
			return wt.String(ph.Kind()), nil
		}),
		"[method]provider.name": providerMethod(func(_ *agentState, ph *contract.ProviderHandle, _ []wt.Val) (wt.Val, error) {
			return wt.String(ph.Name()), nil
		}),
		"[method]provider.chat": providerMethod(func(st *agentState, ph *contract.ProviderHandle, args []wt.Val) (wt.Val, error) {
			req, err := requestOf(args)
			if err != nil {
				return nil, err
			}
			resp, err := ph.Chat(st.stopping, req)
			if err != nil {
				return errResult(err), nil
			}
			return wt.Ok(chatResponseVal(resp)), nil
		}),
		"[method]provider.chat-stream": providerMethod(func(_ *agentState, ph *contract.ProviderHandle, args []wt.Val) (wt.Val, error) {
			req, err := requestOf(args)
			if err != nil {
				return nil, err
			}
			id, err := ph.ChatStream(req)
			if err != nil {
				return errResult(err), nil
			}
			return wt.Ok(wt.String(id)), nil
		}),
		"[method]provider.is-open": providerMethod(func(_ *agentState, ph *contract.ProviderHandle, args []wt.Val) (wt.Val, error) {
			id, err := argString(args, 0)
			if err != nil {
				return nil, err
			}
			return wt.Bool(ph.IsOpen(id)), nil
		}),
		"[method]provider.cancel": providerMethod(func(_ *agentState, ph *contract.ProviderHandle, args []wt.Val) (wt.Val, error) {
			id, err := argString(args, 0)
			if err != nil {
				return nil, err
			}
			return wt.Bool(ph.Cancel(id)), nil
		}),
	})
}
