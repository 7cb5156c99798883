package config

import (
	"fmt"
	"os"
	"strings"
)

// The places Resolve looks, after --config and $TOOLHOSTD_CONFIG.
var (
	localPath  = "toolhostd.toml"
	systemPath = "/etc/toolhostd/toolhostd.toml"
)

// EnvConfig is the environment variable naming the config file.
const EnvConfig = "TOOLHOSTD_CONFIG"

// Resolve picks the config file: flag if set, else $TOOLHOSTD_CONFIG, else
// ./toolhostd.toml, else /etc/toolhostd/toolhostd.toml. A path given by the
// flag or the variable must exist; when nothing is found the error (wrapping
// ErrNoConfig) lists every place tried.
func Resolve(flag string) (string, error) {
	if flag != "" {
		return flag, checkFile(flag, "--config")
	}
	if env := os.Getenv(EnvConfig); env != "" {
		return env, checkFile(env, "$"+EnvConfig)
	}
	var tried []string
	for _, p := range []string{localPath, systemPath} {
		if err := checkFile(p, ""); err == nil {
			return p, nil
		}
		tried = append(tried, p)
	}
	return "", fmt.Errorf("%w: tried --config (not set), $%s (not set), %s; create one (toolhostd config default > toolhostd.toml) or pass --config",
		ErrNoConfig, EnvConfig, strings.Join(tried, ", "))
}

func checkFile(path, from string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil && os.IsNotExist(err):
		return fmt.Errorf("%w: %s (from %s) does not exist", ErrNoConfig, path, from)
	case err != nil:
		return fmt.Errorf("config %s (from %s): %w", path, from, err)
	case fi.IsDir():
		return fmt.Errorf("config %s (from %s) is a directory", path, from)
	}
	return nil
}
