package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
	"github.com/toolhostd/toolhostd/internal/tooling/oauth"
)

// The OAuth commands: auth login, status, logout. Tokens live in the state
// directory; these commands never print one.

func newAuthCmd(opts *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "auth",
		Short: "Log in to OAuth-protected toolings, show and forget their tokens",
		Long: "Toolings with an oauth table ([tooling.NAME] oauth = { ... }) connect with OAuth 2.1 tokens kept in the\n" +
			"state directory ([host] state_dir, default $STATE_DIRECTORY, else $XDG_STATE_HOME/toolhostd).",
	}
	cmd.AddCommand(newAuthLoginCmd(opts), newAuthStatusCmd(opts), newAuthLogoutCmd(opts))
	return cmd
}

// oauthTooling loads the config and returns the tooling called name, which
// must have an oauth table.
func oauthTooling(opts *globalOptions, name string, w io.Writer) (*config.Tooling, *zap.Logger, error) {
	tc, log, err := oneShotTooling(opts, name, w)
	if err != nil {
		return nil, nil, err
	}
	if tc.OAuth == nil {
		return nil, nil, withExit(exitUsage, fmt.Errorf("tooling %s has no oauth table: add oauth = {} to [tooling.%s]", name, name))
	}
	tc.Name = name
	return tc, log, nil
}

func newAuthLoginCmd(opts *globalOptions) *cobra.Command {
	var browser, headless bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "login NAME",
		Short: "Authorize toolhostd for a tooling (OAuth authorization code with PKCE) and store its tokens",
		Long: "login prints the authorization URL on stderr (--browser also opens it), receives the authorization\n" +
			"on a loopback redirect (http://127.0.0.1:PORT/callback; oauth.redirect_port fixes PORT) and stores\n" +
			"the tokens for serve and the one-shot commands, which refresh them.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			tc, log, err := oauthTooling(opts, name, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer func() { _ = log.Sync() }()
			if tc.OAuth.GrantType == config.GrantClientCredentials {
				return withExit(exitUsage, fmt.Errorf("tooling %s uses grant_type client_credentials: it authenticates itself, there is nothing to log in", name))
			}
			lo := oauth.LoginOptions{Prompt: cmd.ErrOrStderr()}
			switch {
			case headless && browser:
				return withExit(exitUsage, fmt.Errorf("--browser and --headless exclude each other"))
			case headless:
				lo.Open = oauth.FollowRedirects
			case browser:
				lo.Open = openBrowser
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			res, err := mcpclient.Login(ctx, tc, log, lo)
			if err != nil {
				return withExit(exitFailure, err)
			}
			out := cmd.OutOrStdout()
			switch {
			case !res.Authorized && res.Unasked != "":
				fmt.Fprintf(out, "%s: the server did not ask for authorization and the flow could not run without it (%s); nothing was stored\n", name, res.Unasked)
				return nil
			case !res.Authorized:
				fmt.Fprintf(out, "%s: the server did not ask for authorization; nothing was stored\n", name)
				return nil
			}
			fmt.Fprintf(out, "%s: logged in; %s\n", name, describeToken(res.State, time.Now()))
			return nil
		},
	}
	cmd.Flags().BoolVar(&browser, "browser", false, "open the authorization URL in a browser ($BROWSER, else xdg-open)")
	cmd.Flags().BoolVar(&headless, "headless", false,
		"fetch the authorization URL with an HTTP client, following redirects (for authorization servers that approve without a person, such as test servers)")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "give up when the authorization has not completed within this time")
	return cmd
}

// describeToken is the token state in words, never the token.
func describeToken(st oauth.AuthState, now time.Time) string {
	var parts []string
	if len(st.Scopes) > 0 {
		parts = append(parts, "scopes "+strings.Join(st.Scopes, " "))
	}
	parts = append(parts, expires(st, now))
	if st.Path != "" {
		parts = append(parts, "stored in "+st.Path)
	}
	return strings.Join(parts, "; ")
}

func expires(st oauth.AuthState, now time.Time) string {
	refresh := ""
	if st.Refreshable {
		refresh = ", refreshable"
	}
	switch {
	case st.Expiry.IsZero():
		return "no expiry" + refresh
	case st.Expiry.After(now):
		return "expires in " + st.Expiry.Sub(now).Round(time.Second).String() + refresh
	default:
		return "expired " + now.Sub(st.Expiry).Round(time.Second).String() + " ago" + refresh
	}
}

// openBrowser opens url with $BROWSER, else xdg-open. It does not wait
// for the browser.
func openBrowser(_ context.Context, url string) error {
	prog := os.Getenv("BROWSER")
	if prog == "" {
		prog = "xdg-open"
	}
	c := exec.Command(prog, url)
	if err := c.Start(); err != nil {
		return err
	}
	go func() { _ = c.Wait() }() // reaped whenever the opener exits
	return nil
}

func newAuthStatusCmd(opts *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "List the OAuth toolings and the state of their tokens (never a token)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := loadConfig(opts)
			if err != nil {
				return err
			}
			names := make([]string, 0, len(c.Tooling))
			for n, tc := range c.Tooling {
				if tc.OAuth != nil {
					names = append(names, n)
				}
			}
			slices.Sort(names)
			out := cmd.OutOrStdout()
			if len(names) == 0 {
				fmt.Fprintln(out, "no tooling has an oauth table")
				return nil
			}
			now := time.Now()
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TOOLING\tGRANT\tSTATE\tEXPIRES\tSCOPES\tNOTE")
			for _, n := range names {
				tc := *c.Tooling[n]
				tc.Name = n
				st := oauth.AuthStatus(&tc)
				exp, scopes := "-", "-"
				if st.State == "logged in" || st.State == "expired" || st.State == "stale" {
					exp = strings.TrimPrefix(expires(st, now), "expires ")
					if len(st.Scopes) > 0 {
						scopes = strings.Join(st.Scopes, " ")
					}
				}
				note := st.Detail
				if st.State == "not logged in" || st.State == "expired" || st.State == "stale" {
					note = strings.TrimPrefix(note+"; run toolhostd auth login "+n, "; ")
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", n, st.Grant, st.State, exp, scopes, oneLine(note))
			}
			return tw.Flush()
		},
	}
}

func newAuthLogoutCmd(opts *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "logout NAME",
		Short: "Forget the stored OAuth tokens of a tooling",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tc, log, err := oauthTooling(opts, args[0], cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer func() { _ = log.Sync() }()
			removed, err := oauth.Logout(tc)
			if err != nil {
				return withExit(exitFailure, err)
			}
			if removed {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: logged out (stored tokens removed)\n", args[0])
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: no stored tokens\n", args[0])
			}
			return nil
		},
	}
}
