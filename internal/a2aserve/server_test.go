package a2aserve_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"go.uber.org/goleak"

	"github.com/toolhostd/toolhostd/internal/a2aserve"
	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/expose"
	"github.com/toolhostd/toolhostd/internal/message"
	"github.com/toolhostd/toolhostd/internal/testenv"
	"github.com/toolhostd/toolhostd/internal/testenv/talker"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fixture struct {
	tk      *talker.Talker
	router  *message.Router
	catalog *expose.Static
	srv     *a2aserve.Server
	url     string
	token   string
}

var exposed = map[string][]expose.Agent{expose.A2A: {
	{Name: "talk", Description: "talks back"},
	{Name: "quiet", Description: "takes no A2A messages"},
	{Name: "skilled", Description: "has skills", Skills: []expose.Skill{{ID: "echo", Name: "Echo", Description: "says it again", Tags: []string{"text"}}}},
}}

// serve is an A2A endpoint over a talker on a loopback httptest server:
// talk and skilled accept a2a, quiet does not.
func serve(t *testing.T, token string) *fixture {
	t.Helper()
	return serveWith(t, token, message.Options{})
}

// serveWith is serve with the router's options.
func serveWith(t *testing.T, token string, ro message.Options) *fixture {
	t.Helper()
	tk := talker.New(t, 8, map[string]message.Target{
		"talk":    {Accepts: []string{"a2a"}, MaxMessageBytes: 64},
		"skilled": {Accepts: []string{"a2a"}},
		"quiet":   {Accepts: []string{"api"}},
	})
	f := &fixture{tk: tk, router: message.NewRouter(tk, ro), catalog: expose.NewStatic(exposed), token: token}
	hs := httptest.NewUnstartedServer(nil) // its listener's address is the cards' URL
	f.url = "http://" + hs.Listener.Addr().String()
	srv, err := a2aserve.New(a2aserve.Options{Router: f.router, Catalog: f.catalog, BaseURL: f.url + "/", Listen: "127.0.0.1:0", Token: token})
	if err != nil {
		hs.Close()
		t.Fatal(err)
	}
	f.srv, hs.Config.Handler = srv, srv
	hs.Start()
	t.Cleanup(func() { srv.Close(); hs.Close() })
	return f
}

func (f *fixture) httpClient() *http.Client {
	if f.token == "" {
		return http.DefaultClient
	}
	return testenv.BearerClient(f.token)
}

func (f *fixture) card(t *testing.T, agent string) *a2a.AgentCard {
	t.Helper()
	card, err := agentcard.DefaultResolver.Resolve(t.Context(), f.url+"/"+agent)
	if err != nil {
		t.Fatal(err)
	}
	return card
}

// client is a2a-go's client of agent; v0 makes it speak A2A 0.3 only.
func (f *fixture) client(t *testing.T, agent string, v0 bool) *a2aclient.Client {
	t.Helper()
	var opts []a2aclient.FactoryOption
	card := f.card(t, agent)
	if v0 {
		r := &agentcard.Resolver{CardParser: a2av0.NewAgentCardParser()}
		var err error
		if card, err = r.Resolve(t.Context(), f.url+"/"+agent); err != nil {
			t.Fatal(err)
		}
		opts = append(opts, a2aclient.WithDefaultsDisabled(), a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: f.httpClient()}))
	} else {
		opts = append(opts, a2aclient.WithJSONRPCTransport(f.httpClient()))
	}
	c, err := a2aclient.NewFromCard(t.Context(), card, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Destroy() })
	return c
}

func text(parts a2a.ContentParts) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text())
	}
	return b.String()
}

func reply(t *testing.T, task *a2a.Task) string {
	t.Helper()
	var b strings.Builder
	for _, a := range task.Artifacts {
		b.WriteString(text(a.Parts))
	}
	return b.String()
}

func userMessage(content, contextID string) *a2a.SendMessageRequest {
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(content))
	m.ContextID = contextID
	return &a2a.SendMessageRequest{Message: m}
}

func TestCard(t *testing.T) {
	f := serve(t, "tok")
	card := f.card(t, "talk")
	if card.Name != "talk" || card.Description != "talks back" || !card.Capabilities.Streaming ||
		len(card.SupportedInterfaces) != 2 || card.SupportedInterfaces[0].URL != f.url+"/talk" ||
		card.SupportedInterfaces[0].ProtocolVersion != a2a.Version {
		t.Fatalf("card %+v", card)
	}
	if len(card.Skills) != 1 || card.Skills[0].Description != "talks back" {
		t.Fatalf("skill from the description: %+v", card.Skills)
	}
	if _, ok := card.SecuritySchemes["bearer"]; !ok || len(card.SecurityRequirements) != 1 {
		t.Fatalf("security %+v %+v", card.SecuritySchemes, card.SecurityRequirements)
	}
	if sk := f.card(t, "skilled").Skills; len(sk) != 1 || sk[0].ID != "echo" || sk[0].Tags[0] != "text" {
		t.Fatalf("configured skills %+v", sk)
	}
	// A 0.3 client reads the same card: its url is the 0.3 endpoint.
	old, err := (&agentcard.Resolver{CardParser: a2av0.NewAgentCardParser()}).Resolve(t.Context(), f.url+"/talk")
	if err != nil || old.Name != "talk" {
		t.Fatalf("0.3 card %+v %v", old, err)
	}
	if _, err := agentcard.DefaultResolver.Resolve(t.Context(), f.url+"/nobody"); err == nil {
		t.Fatal("a card for an agent that is not exposed")
	}
}

func TestSend(t *testing.T) {
	f := serve(t, "")
	for _, v0 := range []bool{false, true} {
		c := f.client(t, "talk", v0)
		for _, tc := range []struct {
			name, content, context string
			state                  a2a.TaskState
			reply, status          string
		}{
			{"reply", "hello", "", a2a.TaskStateCompleted, "hello", ""},
			{"deltas then reply", "words a b", "", a2a.TaskStateCompleted, "a b .", ""},
			{"contextId is the session", "session", "c1", a2a.TaskStateCompleted, "c1", ""},
			{"reply-error", "fail", "", a2a.TaskStateFailed, "", "cannot do that"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				res, err := c.SendMessage(t.Context(), userMessage(tc.content, tc.context))
				if err != nil {
					t.Fatalf("v0 %v: %v", v0, err)
				}
				task, ok := res.(*a2a.Task)
				if !ok {
					t.Fatalf("result %T", res)
				}
				if task.Status.State != tc.state || reply(t, task) != tc.reply {
					t.Fatalf("v0 %v: state %s reply %q", v0, task.Status.State, reply(t, task))
				}
				if tc.status != "" && (task.Status.Message == nil || text(task.Status.Message.Parts) != tc.status) {
					t.Fatalf("status message %+v", task.Status.Message)
				}
				got, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
				if err != nil || got.Status.State != tc.state || reply(t, got) != tc.reply {
					t.Fatalf("GetTask %+v %v", got, err)
				}
				if m, ok := f.router.Get("talk", string(task.ID)); !ok || m.Sender() != "a2a" {
					t.Fatalf("the task is not the message %s", task.ID)
				}
			})
		}
	}
}

func TestRefusals(t *testing.T) {
	f := serve(t, "")
	for _, tc := range []struct {
		name, agent, content string
		want                 error
	}{
		{"sender not accepted", "quiet", "hi", a2a.ErrUnauthorized},
		{"too large", "talk", strings.Repeat("x", 65), a2a.ErrInvalidParams},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.client(t, tc.agent, false).SendMessage(t.Context(), userMessage(tc.content, ""))
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	t.Run("not exposed", func(t *testing.T) {
		card := f.card(t, "talk")
		card.SupportedInterfaces = []*a2a.AgentInterface{a2a.NewAgentInterface(f.url+"/nobody", a2a.TransportProtocolJSONRPC)}
		c, err := a2aclient.NewFromCard(t.Context(), card)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Destroy()
		if _, err := c.SendMessage(t.Context(), userMessage("hi", "")); err == nil {
			t.Fatal("an agent that is not exposed answered")
		}
	})
	t.Run("unknown task", func(t *testing.T) {
		_, err := f.client(t, "talk", false).GetTask(t.Context(), &a2a.GetTaskRequest{ID: "no-such-task"})
		if !errors.Is(err, a2a.ErrTaskNotFound) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestToken(t *testing.T) {
	f := serve(t, "s3cret")
	card := f.card(t, "talk") // public
	for _, tc := range []struct {
		name   string
		client *http.Client
		ok     bool
	}{
		{"missing", http.DefaultClient, false},
		{"wrong", testenv.BearerClient("guess"), false},
		{"right", testenv.BearerClient("s3cret"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := a2aclient.NewFromCard(t.Context(), card, a2aclient.WithJSONRPCTransport(tc.client))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Destroy()
			_, err = c.SendMessage(t.Context(), userMessage("hi", ""))
			if (err == nil) != tc.ok {
				t.Fatalf("got %v, want ok %v", err, tc.ok)
			}
		})
	}
}

func TestStream(t *testing.T) {
	f := serve(t, "")
	for _, v0 := range []bool{false, true} {
		c := f.client(t, "talk", v0)
		var chunks []string
		var states []a2a.TaskState
		var last bool
		for ev, err := range c.SendStreamingMessage(t.Context(), userMessage("words a b c", "c2")) {
			if err != nil {
				t.Fatalf("v0 %v: %v", v0, err)
			}
			switch ev := ev.(type) {
			case *a2a.Task:
				states = append(states, ev.Status.State)
			case *a2a.TaskStatusUpdateEvent:
				states = append(states, ev.Status.State)
			case *a2a.TaskArtifactUpdateEvent:
				chunks = append(chunks, text(ev.Artifact.Parts))
				last = ev.LastChunk
				if ev.ContextID != "c2" {
					t.Fatalf("contextId %q", ev.ContextID)
				}
			}
		}
		if strings.Join(chunks, "|") != "a |b |c |." || !last {
			t.Fatalf("v0 %v: artifact chunks %q, last %v", v0, chunks, last)
		}
		want := []a2a.TaskState{a2a.TaskStateSubmitted, a2a.TaskStateWorking, a2a.TaskStateCompleted}
		if len(states) != 3 || states[0] != want[0] || states[1] != want[1] || states[2] != want[2] {
			t.Fatalf("v0 %v: states %v", v0, states)
		}
	}
}

func TestCancelAndList(t *testing.T) {
	f := serve(t, "")
	c := f.client(t, "talk", false)
	req := userMessage("hold", "c3")
	req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
	res, err := c.SendMessage(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	testenv.Eventually(t, 10*time.Second, "the held task to be working", func() bool {
		got, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
		return err == nil && got.Status.State == a2a.TaskStateWorking
	})
	got, err := c.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("cancel: %+v %v", got, err)
	}
	m, ok := f.router.Get("talk", string(task.ID))
	if !ok || m.View().Status != message.StatusCancelled {
		t.Fatalf("the message was not cancelled: %+v", m.View())
	}
	if _, err := c.SendMessage(t.Context(), userMessage("hello", "c3")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendMessage(t.Context(), userMessage("hello", "c4")); err != nil {
		t.Fatal(err)
	}
	list, err := c.ListTasks(t.Context(), &a2a.ListTasksRequest{ContextID: "c3"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tasks) != 2 || list.Tasks[0].Status.State != a2a.TaskStateCompleted || list.Tasks[1].ID != task.ID ||
		list.Tasks[1].Status.State != a2a.TaskStateCanceled {
		t.Fatalf("tasks of c3: %+v", list.Tasks)
	}
	page, err := c.ListTasks(t.Context(), &a2a.ListTasksRequest{PageSize: 1})
	if err != nil || len(page.Tasks) != 1 || page.TotalSize != 3 || page.NextPageToken == "" {
		t.Fatalf("page %+v %v", page, err)
	}
}

func TestClientGoneMessageGoesOn(t *testing.T) {
	f := serve(t, "")
	c := f.client(t, "talk", false)
	ctx, cancel := context.WithCancel(t.Context())
	var id a2a.TaskID
	for ev, err := range c.SendStreamingMessage(ctx, userMessage("hold", "")) {
		if err != nil {
			t.Fatal(err)
		}
		if ev, ok := ev.(*a2a.TaskArtifactUpdateEvent); ok {
			id = ev.TaskID
			break // the client goes away mid-stream
		}
	}
	cancel()
	if id == "" {
		t.Fatal("no artifact before the hold")
	}
	f.tk.Release()
	testenv.Eventually(t, 10*time.Second, "the task to complete without its client", func() bool {
		got, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: id})
		return err == nil && got.Status.State == a2a.TaskStateCompleted && reply(t, got) == "holding released"
	})
}

// TestMounted serves the endpoint as the daemon does: under /a2a on a mux
// shared with other handlers, its cards naming the prefixed URLs.
func TestMounted(t *testing.T) {
	tk := talker.New(t, 8, map[string]message.Target{"talk": {Accepts: []string{"a2a"}}})
	hs := httptest.NewUnstartedServer(nil)
	base := "http://" + hs.Listener.Addr().String() + config.A2APath
	srv, err := a2aserve.New(a2aserve.Options{Router: message.NewRouter(tk, message.Options{}), BaseURL: base, Listen: "127.0.0.1:0",
		Catalog: expose.NewStatic(map[string][]expose.Agent{expose.A2A: {{Name: "talk"}}})})
	if err != nil {
		hs.Close()
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(config.A2APath+"/", http.StripPrefix(config.A2APath, srv))
	hs.Config.Handler = mux
	hs.Start()
	t.Cleanup(func() { srv.Close(); hs.Close() })

	card, err := agentcard.DefaultResolver.Resolve(t.Context(), base+"/talk")
	if err != nil || srv.CardURL("talk") != base+"/talk"+a2aserve.CardPath {
		t.Fatalf("card %v, CardURL %s", err, srv.CardURL("talk"))
	}
	c, err := a2aclient.NewFromCard(t.Context(), card)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	res, err := c.SendMessage(t.Context(), userMessage("words under a prefix", ""))
	if err != nil {
		t.Fatal(err)
	}
	if task := res.(*a2a.Task); reply(t, task) != "under a prefix ." {
		t.Fatalf("reply %q", reply(t, task))
	}
}
