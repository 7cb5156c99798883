package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/toolhostd/toolhostd/internal/config"
	"github.com/toolhostd/toolhostd/internal/system"
)

// loadConfig resolves the config file (--config, $TOOLHOSTD_CONFIG,
// ./toolhostd.toml, /etc/toolhostd/toolhostd.toml) and loads it. Every error
// exits with exitUsage; a config.Errors lists each problem on its own line.
func loadConfig(opts *globalOptions) (*config.Config, error) {
	path, err := config.Resolve(opts.configPath)
	if err != nil {
		return nil, withExit(exitUsage, err)
	}
	c, err := config.Load(path)
	if err != nil {
		return nil, withExit(exitUsage, err)
	}
	return c, nil
}

// newLogger builds a zap logger writing to w in h.LogFormat ("console" or
// "json"; default console) at h.LogLevel (debug|info|warn|error; default
// info).
func newLogger(h config.Host, w io.Writer) (*zap.Logger, error) {
	level := zapcore.InfoLevel
	if h.LogLevel != "" {
		if err := level.UnmarshalText([]byte(h.LogLevel)); err != nil {
			return nil, fmt.Errorf("log level %q: %w", h.LogLevel, err)
		}
	}
	var enc zapcore.Encoder
	switch h.LogFormat {
	case "", "console":
		ec := zap.NewDevelopmentEncoderConfig()
		ec.EncodeTime = zapcore.ISO8601TimeEncoder
		enc = zapcore.NewConsoleEncoder(ec)
	case "json":
		ec := zap.NewProductionEncoderConfig()
		ec.EncodeTime = zapcore.ISO8601TimeEncoder
		enc = zapcore.NewJSONEncoder(ec)
	default:
		return nil, fmt.Errorf("log format %q: want console or json", h.LogFormat)
	}
	// Many goroutines log (sessions, server stderr, agents): serialise writes.
	ws := zapcore.Lock(zapcore.AddSync(w))
	return zap.New(zapcore.NewCore(enc, ws, level), zap.ErrorOutput(ws)), nil
}

// oneShotTooling loads the config and returns the tooling called name and a
// logger (to w, stderr) for a one-shot command: tools, call, resources,
// read, watch.
func oneShotTooling(opts *globalOptions, name string, w io.Writer) (*config.Tooling, *zap.Logger, error) {
	c, err := loadConfig(opts)
	if err != nil {
		return nil, nil, err
	}
	tc, ok := c.Tooling[name]
	if !ok {
		return nil, nil, withExit(exitUsage, fmt.Errorf("no tooling named %q%s", name, definedNames("toolings", c.Tooling)))
	}
	log, err := newLogger(c.Host, w)
	if err != nil {
		return nil, nil, withExit(exitUsage, err)
	}
	return tc, log, nil
}

// oneShotSystem is the graph of the config for a command on one tooling
// (tools, call, read, watch): only the tooling called name starts, the
// others stay idle; no host, and no provider is opened (a tooling's
// sampling is not offered).
func oneShotSystem(opts *globalOptions, name string, w io.Writer) (*system.System, *zap.Logger, error) {
	c, err := loadConfig(opts)
	if err != nil {
		return nil, nil, err
	}
	if _, ok := c.Tooling[name]; !ok {
		return nil, nil, withExit(exitUsage, fmt.Errorf("no tooling named %q%s", name, definedNames("toolings", c.Tooling)))
	}
	log, err := newLogger(c.Host, w)
	if err != nil {
		return nil, nil, withExit(exitUsage, err)
	}
	sys, err := system.New(c, system.Options{Log: log, NoHost: true, Providers: []string{},
		Toolings: func(n string) bool { return n == name }})
	if err != nil {
		_ = log.Sync()
		return nil, nil, withExit(exitUsage, err)
	}
	return sys, log, nil
}

// definedNames is " (defined: a, b)" for the names of m, or says the config
// defines no what.
func definedNames[V any](what string, m map[string]V) string {
	if len(m) == 0 {
		return " (the config defines no " + what + ")"
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return " (defined: " + strings.Join(names, ", ") + ")"
}
