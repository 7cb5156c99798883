package main

// The cluster's part of the CLI: `ps --cluster` and serve's fence overrun.

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"text/tabwriter"

	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/control"
)

// fenceOverrun ends the process when a fence did not stop the agents in
// time: an ended process runs nothing, so the cluster's guarantee holds.
func fenceOverrun(log *zap.Logger) func() {
	return func() {
		log.Error("fence overran: exiting so that no agent can run past this host's lease")
		_ = log.Sync()
		os.Exit(exitHost)
	}
}

// clusterRow is one agent of `ps --cluster`, or one per-session instance
// of an agent (Session set).
type clusterRow struct {
	Agent   string `json:"agent"`
	Session string `json:"session,omitempty"`
	Host    string `json:"host"`  // "" while no host holds it
	State   string `json:"state"` // as its host last published it
	Config  string `json:"config"`
}

// clusterRows lists every agent known to the cluster's view: the owners
// (ownership keys) and what each member publishes.
func clusterRows(st control.ClusterStatus) []clusterRow {
	byName := map[string]*clusterRow{}
	other := map[string]bool{}
	for _, m := range st.Members {
		if !m.SameConfig {
			other[m.Name] = true
		}
		for a, s := range m.Agents {
			byName[a] = &clusterRow{Agent: a, Host: m.Name, State: s}
		}
	}
	for a, h := range st.Owners {
		r := byName[a]
		if r == nil {
			r = &clusterRow{Agent: a, Host: h, State: "claimed"}
			byName[a] = r
		}
		r.Host = h
	}
	out := make([]clusterRow, 0, len(byName))
	for _, r := range byName {
		out = append(out, *r)
	}
	for _, m := range st.Members {
		for a, ss := range m.Sessions {
			for s, state := range ss {
				out = append(out, clusterRow{Agent: a, Session: s, Host: m.Name, State: state})
			}
		}
	}
	for i := range out {
		out[i].Config = "same"
		if other[out[i].Host] {
			out[i].Config = "OTHER"
		}
	}
	slices.SortFunc(out, func(a, b clusterRow) int {
		return cmp.Or(cmp.Compare(a.Agent, b.Agent), cmp.Compare(a.Session, b.Session), cmp.Compare(a.Host, b.Host))
	})
	return out
}

// clusterTable prints `ps --cluster`: every agent with its host, then the
// members, flagging those on another config than this host's.
func clusterTable(w io.Writer, st control.ClusterStatus) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tSESSION\tHOST\tSTATE\tCONFIG")
	for _, r := range clusterRows(st) {
		session := "-"
		if r.Session != "" {
			session = r.Session
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Agent, session, r.Host, r.State, r.Config)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "MEMBER\tAGENTS\tSETTLED\tADDRESS\tCONFIG")
	for _, m := range st.Members {
		cfg := "same"
		if !m.SameConfig {
			cfg = "OTHER (" + short(m.Digest) + ", this host " + short(st.Digest) + ")"
		}
		me := ""
		if m.Name == st.Name {
			me = " (this host)"
		}
		addr := m.Address
		if addr == "" {
			addr = "-"
		}
		fmt.Fprintf(tw, "%s%s\t%d\t%v\t%s\t%s\n", m.Name, me, len(m.Agents), m.Settled, addr, cfg)
	}
	return tw.Flush()
}

func short(digest string) string {
	if len(digest) > 12 {
		return digest[:12]
	}
	return digest
}
