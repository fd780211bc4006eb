package convert

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ggufkit/ggufkit/readers/hub"
)

// fakeHub serves a model folder the way the Hugging Face Hub does:
// /ORG/NAME/resolve/REV/FILE (safetensors files redirected to a /cdn/
// path, as the Hub redirects LFS files), range requests, and optionally the
// /api/models listing, a token requirement, transient 503s and connections
// cut in the middle of a tensor.
type fakeHub struct {
	dir, repo, rev string
	api            bool
	token          string
	// fail503 is how many requests for a safetensors file answer 503
	// first; cut is how many ranged answers are cut after half their
	// bytes.
	fail503, cut atomic.Int32
	// ranged counts the range requests for safetensors data, cuts the
	// answers cut short.
	ranged, cuts atomic.Int32
}

func (h *fakeHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.token != "" && r.Header.Get("Authorization") != "Bearer "+h.token && !strings.HasPrefix(r.URL.Path, "/cdn/") {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if p, ok := strings.CutPrefix(r.URL.Path, "/api/models/"+h.repo+"/revision/"); ok && h.api && p == h.rev {
		var info struct {
			SHA      string              `json:"sha"`
			Siblings []map[string]string `json:"siblings"`
		}
		info.SHA = strings.Repeat("ab", 20)
		ents, _ := os.ReadDir(h.dir)
		for _, e := range ents {
			info.Siblings = append(info.Siblings, map[string]string{"rfilename": e.Name()})
		}
		json.NewEncoder(w).Encode(info)
		return
	}
	if name, ok := strings.CutPrefix(r.URL.Path, "/"+h.repo+"/resolve/"+h.rev+"/"); ok {
		if strings.HasSuffix(name, ".safetensors") {
			http.Redirect(w, r, "/cdn/"+name, http.StatusFound)
			return
		}
		http.ServeFile(w, r, filepath.Join(h.dir, filepath.FromSlash(name)))
		return
	}
	if name, ok := strings.CutPrefix(r.URL.Path, "/cdn/"); ok {
		if h.fail503.Add(-1) >= 0 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		f, err := os.Open(filepath.Join(h.dir, filepath.FromSlash(name)))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		defer f.Close()
		if r.Header.Get("Range") == "" {
			http.Error(w, "this test's CDN serves ranges only", http.StatusBadRequest)
			return
		}
		h.ranged.Add(1)
		var out http.ResponseWriter = w
		if h.cut.Add(-1) >= 0 {
			out = &cutWriter{ResponseWriter: w, cuts: &h.cuts}
		}
		http.ServeContent(out, r, name, time.Time{}, f)
		return
	}
	http.NotFound(w, r)
}

// cutWriter sends the headers and half of the body, then drops the
// connection.
type cutWriter struct {
	http.ResponseWriter
	left int
	cuts *atomic.Int32
}

func (c *cutWriter) WriteHeader(code int) {
	n := 0
	if v := c.Header().Get("Content-Length"); v != "" {
		json.Unmarshal([]byte(v), &n)
	}
	c.left = n / 2
	c.ResponseWriter.WriteHeader(code)
}

func (c *cutWriter) Write(b []byte) (int, error) {
	if len(b) > c.left {
		c.ResponseWriter.Write(b[:c.left])
		if f, ok := c.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
		c.cuts.Add(1)
		panic(http.ErrAbortHandler)
	}
	c.left -= len(b)
	return c.ResponseWriter.Write(b)
}

func sha(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// hubTest is a local model folder of a fixture, served by a fake Hub, and
// the local conversion's digest.
func hubTest(t *testing.T, fixtureName, outType string) (*fakeHub, *httptest.Server, string) {
	t.Helper()
	fdir := filepath.Join(fixtures, fixtureName)
	local := assemble(t, fdir, loadFixture(t, fdir), false)
	out := filepath.Join(t.TempDir(), "local.gguf")
	if _, err := Run(context.Background(), local, Options{OutType: outType, OutFile: out}); err != nil {
		t.Fatal(err)
	}
	h := &fakeHub{dir: local, repo: "org/" + filepath.Base(local), rev: "main"}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_HOME", t.TempDir())
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	return h, srv, sha(t, out)
}

func hubOptions(srv *httptest.Server) hub.Options {
	return hub.Options{Endpoint: srv.URL, Backoff: time.Millisecond, Retries: 3}
}

// TestHubConversion: a model read from a Hub by range requests converts to
// the bytes of its local conversion, through the API's listing or without
// it, a sharded checkpoint too, across redirects, a 503 and a transfer cut
// in the middle of a tensor.
func TestHubConversion(t *testing.T) {
	for _, tc := range []struct {
		name, fixture, outType string
		api                    bool
	}{
		{"api", "llama1", "f16", true},
		{"probe", "llama1", "Q4_K_M", false},
		{"sharded", "mistral", "q8_0", true},
		{"sharded-probe", "mistral", "f32", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, srv, want := hubTest(t, tc.fixture, tc.outType)
			h.api = tc.api
			h.fail503.Store(1)
			h.cut.Store(1)
			out := filepath.Join(t.TempDir(), "remote.gguf")
			_, err := Run(context.Background(), "hf:"+h.repo, Options{OutType: tc.outType, OutFile: out, Hub: hubOptions(srv)})
			if err != nil {
				t.Fatal(err)
			}
			if got := sha(t, out); got != want {
				t.Errorf("remote conversion %s, local %s", got, want)
			}
			if h.ranged.Load() == 0 || h.cuts.Load() != 1 || h.fail503.Load() >= 0 {
				t.Errorf("%d range requests, %d cut, 503s left %d: the test did not exercise what it says",
					h.ranged.Load(), h.cuts.Load(), h.fail503.Load())
			}
		})
	}
}

// TestHubFailures: a token the Hub wants, a file that keeps failing, an
// unknown repository — each an error saying what failed, and no output.
func TestHubFailures(t *testing.T) {
	h, srv, want := hubTest(t, "llama1", "f16")
	h.api = true
	h.token = "secret"
	dir := t.TempDir()
	out := filepath.Join(dir, "x.gguf")
	_, err := Run(context.Background(), "hf:"+h.repo, Options{OutType: "f16", OutFile: out, Hub: hubOptions(srv)})
	if !errors.Is(err, hub.ErrAuth) || !strings.Contains(err.Error(), "HF_TOKEN") {
		t.Errorf("without a token: %v, want ErrAuth naming HF_TOKEN", err)
	}
	t.Setenv("HF_TOKEN", "secret")
	if _, err := Run(context.Background(), "hf:"+h.repo, Options{OutType: "f16", OutFile: out, Hub: hubOptions(srv)}); err != nil {
		t.Fatalf("with HF_TOKEN: %v", err)
	}
	if sha(t, out) != want {
		t.Error("with HF_TOKEN: not the local conversion's bytes")
	}
	os.Remove(out)

	h.fail503.Store(1000)
	_, err = Run(context.Background(), "hf:"+h.repo, Options{OutType: "f16", OutFile: out, Hub: hubOptions(srv)})
	if err == nil || !strings.Contains(err.Error(), "giving up after 4 tries") || !strings.Contains(err.Error(), "503") {
		t.Errorf("a file that keeps failing: %v", err)
	}
	h.fail503.Store(0)
	_, err = Run(context.Background(), "hf:org/missing", Options{OutType: "f16", OutFile: out, Hub: hubOptions(srv)})
	if !errors.Is(err, hub.ErrNotFound) {
		t.Errorf("unknown repository: %v, want ErrNotFound", err)
	}
	if _, err = Run(context.Background(), "hf:not a repo", Options{OutFile: out, Hub: hubOptions(srv)}); !errors.Is(err, hub.ErrSpec) {
		t.Errorf("bad reference: %v, want ErrSpec", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("failed conversions left %d files in the output folder", len(ents))
	}
}

// TestHubCache: a file in the Hugging Face cache's snapshot of the commit
// is read from there, not over the network.
func TestHubCache(t *testing.T) {
	h, srv, want := hubTest(t, "llama1", "f16")
	h.api = true
	cache := t.TempDir()
	snap := filepath.Join(cache, "models--"+strings.ReplaceAll(h.repo, "/", "--"), "snapshots", strings.Repeat("ab", 20))
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(h.dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(snap, "model.safetensors"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	opts := hubOptions(srv)
	opts.CacheDir = cache
	out := filepath.Join(t.TempDir(), "x.gguf")
	if _, err := Run(context.Background(), "hf:"+h.repo, Options{OutType: "f16", OutFile: out, Hub: opts}); err != nil {
		t.Fatal(err)
	}
	if sha(t, out) != want {
		t.Error("not the local conversion's bytes")
	}
	if n := h.ranged.Load(); n != 0 {
		t.Errorf("%d range requests for a cached file", n)
	}
}
