package config

import (
	"strings"
	"testing"
)

// TestControlKeys: the [host] control keys decode, resolve and validate;
// TCP without a token is refused wherever the keys appear.
func TestControlKeys(t *testing.T) {
	tests := []struct {
		name, host string
		want       Host   // compared on the control fields
		err        string // substring of the error; "" for none
	}{
		{name: "none", host: ``},
		{name: "empty strings are unset", host: "control_socket = \"\"\ncontrol_listen = \"\"\ncontrol_token = \"\""},
		{name: "socket absolute", host: `control_socket = "/run/x.sock"`, want: Host{HostControl: HostControl{ControlSocket: "/run/x.sock"}}},
		{name: "socket relative", host: `control_socket = "x.sock"`, want: Host{HostControl: HostControl{ControlSocket: "/etc/th/x.sock"}}},
		{name: "tcp with token", host: "control_listen = \"[::1]:7070\"\ncontrol_token = \"${file:/run/secrets/t}\"",
			want: Host{HostControl: HostControl{ControlListen: "[::1]:7070", ControlToken: "${file:/run/secrets/t}"}}},
		{name: "literal token", host: "control_listen = \":7070\"\ncontrol_token = \"s3cret\"",
			want: Host{HostControl: HostControl{ControlListen: ":7070", ControlToken: "s3cret"}}},
		{name: "token alone", host: `control_token = "${env:T}"`, want: Host{HostControl: HostControl{ControlToken: "${env:T}"}}},
		{name: "tcp without token", host: `control_listen = "127.0.0.1:7070"`, err: "toolhostd.toml:3:1: host.control_listen: needs control_token"},
		{name: "empty token", host: "control_listen = \"127.0.0.1:7070\"\ncontrol_token = \"\"", err: "host.control_listen: needs control_token"},
		{name: "no port", host: `control_listen = "127.0.0.1"`, err: "want host:port"},
		{name: "port zero", host: "control_listen = \"127.0.0.1:0\"\ncontrol_token = \"t\"", err: `invalid port "0"`},
		{name: "named port", host: "control_listen = \"127.0.0.1:http\"\ncontrol_token = \"t\"", err: `invalid port "http"`},
		{name: "reference in socket", host: `control_socket = "${env:DIR}/s"`, err: "host.control_socket: ${...} references are not expanded here"},
		{name: "bad reference in token", host: `control_token = "${nope:x}"`, err: "host.control_token:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("/etc/th/toolhostd.toml", []byte("version = 1\n[host]\n"+tt.host+"\n"))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := Host{HostControl: HostControl{ControlSocket: c.Host.ControlSocket, ControlListen: c.Host.ControlListen, ControlToken: c.Host.ControlToken}}
			if got != tt.want {
				t.Errorf("host = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestDefaultConfigControl: the commented control keys of `config default`
// are valid once uncommented.
func TestDefaultConfigControl(t *testing.T) {
	var b strings.Builder
	n := 0
	for _, line := range strings.Split(Default(), "\n") {
		if strings.HasPrefix(line, "# control_") {
			line = strings.TrimPrefix(line, "# ")
			n++
		}
		b.WriteString(line + "\n")
	}
	if n != 3 {
		t.Fatalf("found %d commented control keys, want 3", n)
	}
	c, err := Parse("toolhostd.toml", []byte(b.String()))
	if err != nil {
		t.Fatalf("Default() with control keys uncommented:\n%v", err)
	}
	want := Host{
		LogLevel:         "info",
		LogFormat:        "console",
		MaxThreads:       DefaultMaxThreads,
		MessageRetention: Duration{DefaultRetention},
		Store:            HostStore{Backend: StoreBbolt},
		HostControl:      HostControl{ControlSocket: "/run/toolhostd/toolhostd.sock", ControlListen: "127.0.0.1:7070", ControlToken: "${env:TOOLHOSTD_TOKEN}"},
	}
	if c.Host != want {
		t.Errorf("host = %+v, want %+v", c.Host, want)
	}
}
