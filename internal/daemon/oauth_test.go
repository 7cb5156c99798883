package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/tooling/mcpclient"
	"github.com/toolhostd/toolhostd/internal/tooling/oauth"
	"github.com/toolhostd/toolhostd/internal/tooling/oauth/oauthtest"
	"github.com/toolhostd/toolhostd/internal/tooling/oauth/tokenstore"
)

// TestOAuthTooling: serve with an OAuth tooling nobody has logged in to
// reports it through the control API as needing `toolhostd auth login`
// (and does not hammer the server); a login (what `toolhostd auth login`
// runs) brings it up without a reload; no token or client secret reaches
// the logs, the control API or the metrics.
func TestOAuthTooling(t *testing.T) {
	const prefix = "DAEMON-TOK-"
	srv := mcp.NewServer(&mcp.Implementation{Name: "saas", Version: "1"}, nil)
	testenv.AddEcho(srv)
	as := oauthtest.NewServer(oauthtest.Config{TokenPrefix: prefix})
	defer as.Close()
	res := oauthtest.NewResource(as, srv, []string{"tools"})
	defer res.Close()

	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	text := headerState(t, state) + fmt.Sprintf("[tooling.saas]\nurl = %q\noauth = {}\nrestart = { initial_backoff = \"20ms\", max_backoff = \"100ms\" }\n", res.URL+"/mcp")
	path := writeConfig(t, dir, text)
	r := serve(t, path, Options{Metrics: true})
	m := r.d.Metrics()
	defer r.stop(t) // before the servers close

	testenv.Eventually(t, 10*time.Second, "the login hint", func() bool {
		return strings.Contains(r.tooling(t, "saas").LastError, "no token is stored: run toolhostd auth login saas")
	})
	if st := r.tooling(t, "saas"); st.State == toolingConnected || r.d.Ready() {
		t.Errorf("a tooling without a token: state %s, ready %v", st.State, r.d.Ready())
	}
	// No event says "did not reconnect": the window is the check, three
	// max_backoff periods in which a retrying tooling would reconnect.
	time.Sleep(300 * time.Millisecond)
	if n := r.tooling(t, "saas").Restarts; n != 0 {
		t.Errorf("%d reconnections while waiting for a login", n)
	}

	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	tc := cfg.Tooling["saas"]
	tc.Name = "saas"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := mcpclient.Login(ctx, tc, zap.NewNop(), oauth.LoginOptions{Open: oauth.FollowRedirects}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "the tooling to connect after the login", func() bool {
		return r.tooling(t, "saas").State == toolingConnected
	})
	if !r.d.Ready() {
		t.Errorf("not ready with every tooling connected")
	}

	rec, err := tokenstore.New(state).Load("saas")
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, e := range r.logs.All() {
		texts = append(texts, e.Message)
		for _, v := range e.ContextMap() {
			texts = append(texts, fmt.Sprint(v))
		}
	}
	api, err := json.Marshal(r.d.Toolings())
	if err != nil {
		t.Fatal(err)
	}
	texts = append(texts, string(api))
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		texts = append(texts, f.String())
	}
	for _, s := range texts {
		for _, secret := range []string{prefix, rec.AccessToken, rec.RefreshToken, rec.ClientSecret} {
			if strings.Contains(s, secret) {
				t.Fatalf("a token or secret leaked: %q", s)
			}
		}
	}
}
