package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// UnmarshalText parses a Go duration string such as "250ms" or "1m30s".
// Negative durations are rejected.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := parseDuration(string(b))
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// MarshalText writes the duration as a Go duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.Duration.String()), nil }

func parseDuration(s string) (time.Duration, error) {
	v, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q (want e.g. \"250ms\", \"10s\", \"1m\")", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return v, nil
}

var byteUnits = []struct {
	suffix string
	mult   uint64
}{
	// Longest suffixes first so that "KiB" is not read as "B".
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"b", 1},
}

// ParseByteSize parses "4096", "256MiB", "1GB", "512 KiB" (units are
// case-insensitive: B, KB/MB/GB/TB powers of 1000, KiB/MiB/GiB/TiB powers of
// 1024).
func ParseByteSize(s string) (ByteSize, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := uint64(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(t, u.suffix) {
			t = strings.TrimSpace(strings.TrimSuffix(t, u.suffix))
			mult = u.mult
			break
		}
	}
	n, err := strconv.ParseUint(t, 10, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			return 0, fmt.Errorf("size %q is too large", s)
		}
		return 0, fmt.Errorf("invalid size %q (want e.g. 4096, \"256MiB\", \"1GB\")", s)
	}
	if n > math.MaxUint64/mult {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return ByteSize(n * mult), nil
}

// UnmarshalText parses a size as ParseByteSize does.
func (b *ByteSize) UnmarshalText(text []byte) error {
	v, err := ParseByteSize(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// MarshalText writes the size with the largest binary unit that divides it.
func (b ByteSize) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// String writes the size with the largest binary unit that divides it
// exactly ("256MiB", "1000B" stays "1000").
func (b ByteSize) String() string {
	units := []struct {
		name string
		mult uint64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}
	n := uint64(b)
	for _, u := range units {
		if n != 0 && n%u.mult == 0 {
			return strconv.FormatUint(n/u.mult, 10) + u.name
		}
	}
	return strconv.FormatUint(n, 10)
}
