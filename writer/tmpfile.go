package writer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// processStart separates the temporary files of this run from those a
// killed earlier run left behind.
var processStart = time.Now()

type staleKey struct{}

// WithStaleReporter returns a context whose writers call report with the
// path of each stale temporary file they remove: one of ours for the same
// destination, last written before this process started and held by no
// live writer (left by a run that was killed). On Linux the temporary file
// has no name until it is complete (O_TMPFILE), so none is left behind.
func WithStaleReporter(ctx context.Context, report func(path string)) context.Context {
	return context.WithValue(ctx, staleKey{}, report)
}

// createNamedTemp creates the temporary file beside the destination,
// .BASE.NNN.partial, locked while it is written where the system can lock.
func createNamedTemp(dir, base string) (*os.File, string, error) {
	f, err := os.CreateTemp(dir, "."+base+".*.partial")
	if err != nil {
		return nil, "", fmt.Errorf("writer: %w", err)
	}
	lockTemp(f)
	return f, f.Name(), nil
}

// removeStale removes the stale temporary files of dir/base (see
// WithStaleReporter) and reports each.
func removeStale(ctx context.Context, dir, base string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	prefix := "." + base + "."
	for _, e := range entries {
		n := e.Name()
		mid, ok := strings.CutPrefix(n, prefix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		if mid, ok = strings.CutSuffix(mid, ".partial"); !ok || mid == "" || strings.Trim(mid, "0123456789") != "" {
			continue
		}
		info, err := e.Info()
		if err != nil || !info.ModTime().Before(processStart) {
			continue
		}
		p := filepath.Join(dir, n)
		if tempInUse(p) || os.Remove(p) != nil {
			continue
		}
		if report, ok := ctx.Value(staleKey{}).(func(string)); ok {
			report(p)
		}
	}
}
