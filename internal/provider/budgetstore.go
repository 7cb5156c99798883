package provider

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// BudgetsDir is where a daemon with state directory stateDir (see
// config.Config.StateDir) keeps its budgets.
func BudgetsDir(stateDir string) string { return filepath.Join(stateDir, "budgets") }

// Budgets keeps the token counters of every agent on every provider in a
// directory, one file per agent and provider (AGENT.PROVIDER.json, mode
// 0600: names hold no dot), written after each request that used tokens,
// so that the budgets survive a daemon restart. A counter is the tokens
// used per minute over the last 24 hours.
type Budgets struct {
	dir string

	mu       sync.Mutex
	counters map[string]*counter
}

// OpenBudgets opens (making it if needed, mode 0700) the budgets directory.
func OpenBudgets(dir string) (*Budgets, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("budgets: %w", err)
	}
	return &Budgets{dir: dir, counters: map[string]*counter{}}, nil
}

// counter is agent's counter on provider, read from its file the first
// time.
func (b *Budgets) counter(agent, provider string) (*counter, error) {
	key := agent + "." + provider
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := b.counters[key]; c != nil {
		return c, nil
	}
	c := &counter{path: filepath.Join(b.dir, key+".json")}
	data, err := os.ReadFile(c.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("budgets: %w", err)
	default:
		var f budgetFile
		if err := json.Unmarshal(data, &f); err != nil {
			return nil, fmt.Errorf("budgets: %s: %w (remove it to start agent %s's budget on provider %s from zero)", c.path, err, agent, provider)
		}
		c.buckets = f.Minutes
	}
	b.counters[key] = c
	return c, nil
}

// budgetFile is the content of a counter's file.
type budgetFile struct {
	Version int      `json:"version"`
	Minutes []bucket `json:"minutes"` // oldest first
}

// bucket is the tokens used in one minute (Unix time / 60).
type bucket struct {
	Minute int64 `json:"minute"`
	Tokens int64 `json:"tokens"`
}

// counter is the tokens one agent used on one provider, per minute.
type counter struct {
	path string // "": kept in memory only

	mu      sync.Mutex
	buckets []bucket
}

// used is the tokens of the minutes that lie within window before now.
func (c *counter) used(now time.Time, window time.Duration) int64 {
	from := now.Add(-window).Unix() / 60
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, b := range c.buckets {
		if b.Minute > from {
			n += b.Tokens
		}
	}
	return n
}

// add counts n tokens at now, forgets the minutes older than a day and
// writes the file.
func (c *counter) add(now time.Time, n int64) error {
	minute := now.Unix() / 60
	c.mu.Lock()
	defer c.mu.Unlock()
	if k := len(c.buckets); k > 0 && c.buckets[k-1].Minute == minute {
		c.buckets[k-1].Tokens += n
	} else {
		c.buckets = append(c.buckets, bucket{Minute: minute, Tokens: n})
	}
	oldest := now.Add(-24*time.Hour).Unix() / 60
	i := 0
	for i < len(c.buckets) && c.buckets[i].Minute <= oldest {
		i++
	}
	c.buckets = c.buckets[i:]
	if c.path == "" {
		return nil
	}
	data, err := json.Marshal(budgetFile{Version: 1, Minutes: c.buckets})
	if err != nil {
		return err
	}
	tmp := c.path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, c.path)
}
