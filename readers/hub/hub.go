// Package hub opens a model stored in a Hugging Face Hub repository without
// downloading its weights: the configuration, tokenizer and model-card files
// are fetched into a temporary folder laid out like a snapshot, and each
// safetensors file is read by HTTP range requests as the conversion asks
// for its tensors. Files already in the local Hugging Face cache (the
// snapshot of the same commit) are read from there instead.
//
// A model is named "hf:ORG/NAME" or "hf:ORG/NAME@REVISION" (a branch, tag
// or commit; main by default). The Hub is HF_ENDPOINT
// (https://huggingface.co by default); the token is HF_TOKEN, else the
// file HF_TOKEN_PATH, else HF_HOME/token (~/.cache/huggingface/token).
package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ggufkit/ggufkit/readers/hf"
	"github.com/ggufkit/ggufkit/readers/safetensors"
)

// Prefix starts a model reference Open accepts.
const Prefix = "hf:"

// DefaultEndpoint is the Hub's address when HF_ENDPOINT is not set.
const DefaultEndpoint = "https://huggingface.co"

// ErrSpec is returned for a reference that is not ORG/NAME[@REVISION].
var ErrSpec = errors.New("hub: not a repository reference")

// ErrAuth is returned when the Hub refuses a request for want of a (valid)
// token.
var ErrAuth = errors.New("hub: the repository needs a token")

// ErrNotFound is returned for a repository, revision or file the Hub does
// not have.
var ErrNotFound = errors.New("hub: not found")

// ErrNoSafetensors is returned for a repository without safetensors
// weights: only those can be read by range requests.
var ErrNoSafetensors = errors.New("hub: no safetensors weights (remote conversion reads safetensors only; download the repository to convert other formats)")

// Spec names a repository and a revision.
type Spec struct {
	Repo     string // ORG/NAME
	Revision string // branch, tag or commit
}

// IsSpec reports whether s is meant as a Hub reference (it starts with
// Prefix).
func IsSpec(s string) bool { return strings.HasPrefix(s, Prefix) }

var repoPart = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// ParseSpec parses "hf:ORG/NAME[@REVISION]".
func ParseSpec(s string) (Spec, error) {
	rest, ok := strings.CutPrefix(s, Prefix)
	if !ok {
		return Spec{}, fmt.Errorf("%w: %q does not start with %q", ErrSpec, s, Prefix)
	}
	repo, rev, hasRev := strings.Cut(rest, "@")
	if !hasRev {
		rev = "main"
	}
	parts := strings.Split(repo, "/")
	if len(parts) != 2 || !repoPart.MatchString(parts[0]) || !repoPart.MatchString(parts[1]) ||
		strings.Contains(repo, "..") {
		return Spec{}, fmt.Errorf("%w: %q is not ORG/NAME", ErrSpec, repo)
	}
	if rev == "" || strings.ContainsAny(rev, " \\") || strings.Contains(rev, "..") {
		return Spec{}, fmt.Errorf("%w: revision %q", ErrSpec, rev)
	}
	return Spec{Repo: repo, Revision: rev}, nil
}

func (s Spec) String() string { return Prefix + s.Repo + "@" + s.Revision }

// Options set how Open reaches the Hub. The zero value reads the
// environment (see the package comment).
type Options struct {
	// Endpoint is the Hub's base URL; "" means HF_ENDPOINT or
	// DefaultEndpoint.
	Endpoint string
	// Token is sent as a bearer token; "" means the environment's, if any.
	Token string
	// CacheDir is the Hugging Face hub cache (models--ORG--NAME folders);
	// "" means HF_HUB_CACHE, else HF_HOME/hub, else
	// ~/.cache/huggingface/hub. A missing folder is not an error.
	CacheDir string
	// Client makes the requests; nil means a client with a 60 s
	// response-header timeout.
	Client *http.Client
	// Retries is how many times a failed request (a network error, a cut
	// transfer, 429 or a 5xx status) is retried; 0 means 5, negative none.
	Retries int
	// Backoff is the wait before the first retry, doubled each time; 0
	// means 500 ms.
	Backoff time.Duration
	// Progress, when set, is called with the number of bytes each read
	// brought over the network.
	Progress func(n int64)
}

func (o Options) withDefaults() Options {
	if o.Endpoint == "" {
		o.Endpoint = os.Getenv("HF_ENDPOINT")
		if o.Endpoint == "" {
			o.Endpoint = DefaultEndpoint
		}
	}
	o.Endpoint = strings.TrimRight(o.Endpoint, "/")
	if o.Token == "" {
		o.Token = envToken()
	}
	if o.CacheDir == "" {
		o.CacheDir = cacheDir()
	}
	if o.Client == nil {
		o.Client = &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			ResponseHeaderTimeout: 60 * time.Second,
			IdleConnTimeout:       90 * time.Second,
		}}
	}
	if o.Retries == 0 {
		o.Retries = 5
	}
	if o.Backoff == 0 {
		o.Backoff = 500 * time.Millisecond
	}
	return o
}

// hfHome is HF_HOME, else ~/.cache/huggingface.
func hfHome() string {
	if h := os.Getenv("HF_HOME"); h != "" {
		return h
	}
	if h := os.Getenv("XDG_CACHE_HOME"); h != "" {
		return filepath.Join(h, "huggingface")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".cache", "huggingface")
}

func envToken() string {
	for _, k := range []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"} {
		if t := strings.TrimSpace(os.Getenv(k)); t != "" {
			return t
		}
	}
	p := os.Getenv("HF_TOKEN_PATH")
	if p == "" && hfHome() != "" {
		p = filepath.Join(hfHome(), "token")
	}
	if p == "" {
		return ""
	}
	b, err := os.ReadFile(p)
	if err != nil || len(b) > 4096 {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func cacheDir() string {
	if d := os.Getenv("HF_HUB_CACHE"); d != "" {
		return d
	}
	if h := hfHome(); h != "" {
		return filepath.Join(h, "hub")
	}
	return ""
}

// smallFile reports whether a repository file is one Open downloads: the
// configuration, tokenizer and model-card files (llama.cpp's --remote
// downloads "LICENSE", "*.json", "*.md", "*.txt" and tokenizer.model;
// ggufkit adds the other tokenizer files it reads).
func smallFile(name string) bool {
	base := path.Base(name)
	if base == "LICENSE" || slices.Contains(hf.TokenizerNames, base) {
		return true
	}
	switch path.Ext(base) {
	case ".json", ".md", ".txt", ".jinja", ".tiktoken":
		return true
	}
	return false
}

// probeNames are the files tried one by one when the Hub's API gives no
// file list (a plain file server laid out like the Hub).
var probeNames = append([]string{
	"config.json", "generation_config.json", "README.md", "LICENSE", "params.json",
	safetensors.IndexName, "model.safetensors",
}, hf.TokenizerNames...)

// maxSmallFile bounds a downloaded configuration or tokenizer file.
const maxSmallFile = 256 << 20

// Open opens the repository s names as an hf.Model: small files in a
// temporary folder named after the repository (removed when the model is
// closed), safetensors weights read remotely. The weights are chosen as
// for a local folder: model.safetensors.index.json, else the
// model*.safetensors files, else every *.safetensors file.
func Open(ctx context.Context, s Spec, opts Options) (*hf.Model, error) {
	c := &client{opts: opts.withDefaults(), spec: s}
	commit, files, err := c.listing(ctx)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "ggufkit-hub-*")
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	cleanup := func() error { return os.RemoveAll(tmp) }
	root := filepath.Join(tmp, path.Base(s.Repo))
	m, err := c.open(ctx, root, commit, files)
	if err != nil {
		cleanup()
		return nil, err
	}
	return hf.OpenSource(root, m, cleanup)
}

func (c *client) open(ctx context.Context, root, commit string, files []string) (*safetensors.Source, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	c.snapshot = c.cachedSnapshot(commit)
	have := map[string]bool{}
	var weights []string
	for _, f := range files {
		switch {
		case strings.HasSuffix(f, ".safetensors") && !strings.Contains(f, "/"):
			weights = append(weights, f)
			have[f] = true
		case smallFile(f):
			ok, err := c.download(ctx, f, filepath.Join(root, filepath.FromSlash(f)))
			if err != nil {
				return nil, err
			}
			have[f] = ok
		}
	}
	if !have["config.json"] && !have[hf.ParamsName] {
		return nil, fmt.Errorf("%w: %s (no config.json)", ErrNotFound, c.spec)
	}
	open := func(name string) (*safetensors.File, error) { return c.openSafetensors(ctx, name) }
	if have[safetensors.IndexName] {
		return safetensors.OpenIndexWith(filepath.Join(root, safetensors.IndexName), open,
			func(shard string) bool { return have[shard] || c.listed == nil })
	}
	var model, all []string
	for _, w := range weights {
		all = append(all, w)
		if strings.HasPrefix(w, "model") {
			model = append(model, w)
		}
	}
	if len(model) == 0 {
		model = all
	}
	if len(model) == 0 {
		return nil, fmt.Errorf("%s: %w", c.spec, ErrNoSafetensors)
	}
	slices.Sort(model)
	src, err := safetensors.OpenFilesWith(root, model, open)
	if errors.Is(err, ErrNotFound) && c.listed == nil {
		// Probed for, not there.
		return nil, fmt.Errorf("%s: %w", c.spec, ErrNoSafetensors)
	}
	return src, err
}

// client makes the requests of one Open.
type client struct {
	opts Options
	spec Spec
	// listed is the API's file list (nil when files were probed).
	listed []string
	// snapshot is the cache folder of the commit, "" when not cached.
	snapshot string
}

func (c *client) fileURL(name string) string {
	segs := strings.Split(name, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return c.opts.Endpoint + "/" + c.spec.Repo + "/resolve/" + url.PathEscape(c.spec.Revision) + "/" + strings.Join(segs, "/")
}

// apiInfo is the part of /api/models/ORG/NAME/revision/REV that matters.
type apiInfo struct {
	SHA      string `json:"sha"`
	Siblings []struct {
		Name string `json:"rfilename"`
	} `json:"siblings"`
}

// listing returns the revision's commit (when known) and its files: from
// the Hub's API, else the names worth probing.
func (c *client) listing(ctx context.Context) (string, []string, error) {
	u := c.opts.Endpoint + "/api/models/" + c.spec.Repo + "/revision/" + url.PathEscape(c.spec.Revision)
	body, err := c.get(ctx, u, maxSmallFile)
	switch {
	case err == nil:
		var info apiInfo
		if err := json.Unmarshal(body, &info); err != nil {
			return "", nil, fmt.Errorf("hub: %s: the API's answer is not the expected JSON: %v", u, err)
		}
		for _, s := range info.Siblings {
			if s.Name == "" || strings.HasPrefix(s.Name, "/") || strings.Contains(s.Name, "..") {
				return "", nil, fmt.Errorf("hub: %s: file name %q outside the repository", u, s.Name)
			}
			c.listed = append(c.listed, s.Name)
		}
		slices.Sort(c.listed)
		return info.SHA, c.listed, nil
	case errors.Is(err, ErrNotFound):
		// No API (or an unknown repository, which the probes will say):
		// try the usual names.
		return c.cachedCommit(), probeNames, nil
	}
	return "", nil, err
}

var commitHash = regexp.MustCompile(`^[0-9a-f]{40}$`)

// cachedCommit is the commit the cache's refs/REVISION names, or the
// revision itself when it is a commit hash.
func (c *client) cachedCommit() string {
	if commitHash.MatchString(c.spec.Revision) {
		return c.spec.Revision
	}
	if c.opts.CacheDir == "" {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(c.repoCache(), "refs", filepath.FromSlash(c.spec.Revision)))
	if err != nil {
		return ""
	}
	if h := strings.TrimSpace(string(b)); commitHash.MatchString(h) {
		return h
	}
	return ""
}

func (c *client) repoCache() string {
	return filepath.Join(c.opts.CacheDir, "models--"+strings.ReplaceAll(c.spec.Repo, "/", "--"))
}

// cachedSnapshot is the cache folder of commit, "" when there is none.
func (c *client) cachedSnapshot(commit string) string {
	if commit == "" || !commitHash.MatchString(commit) || c.opts.CacheDir == "" {
		return ""
	}
	dir := filepath.Join(c.repoCache(), "snapshots", commit)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return ""
	}
	return dir
}

// cached is the cache's copy of a file, "" when there is none.
func (c *client) cached(name string) string {
	if c.snapshot == "" {
		return ""
	}
	p := filepath.Join(c.snapshot, filepath.FromSlash(name))
	if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
		return p
	}
	return ""
}

// download fetches a small file to dst (from the cache when it is there).
// A file the Hub does not have is no error when it was only probed for.
func (c *client) download(ctx context.Context, name, dst string) (bool, error) {
	var b []byte
	if p := c.cached(name); p != "" {
		var err error
		if b, err = os.ReadFile(p); err != nil {
			return false, fmt.Errorf("hub: %w", err)
		}
	} else {
		var err error
		b, err = c.get(ctx, c.fileURL(name), maxSmallFile)
		if errors.Is(err, ErrNotFound) && c.listed == nil {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return false, fmt.Errorf("hub: %w", err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		return false, fmt.Errorf("hub: %w", err)
	}
	return true, nil
}

// openSafetensors opens a weights file: the cache's copy, or the remote
// file read by range requests.
func (c *client) openSafetensors(ctx context.Context, name string) (*safetensors.File, error) {
	if p := c.cached(name); p != "" {
		return safetensors.OpenFile(p)
	}
	r := &rangeReader{c: c, ctx: ctx, url: c.fileURL(name), name: c.spec.Repo + "/" + name}
	size, err := r.size()
	if err != nil {
		return nil, err
	}
	return safetensors.NewFile(r, size, r.name)
}

// get fetches a whole (small) resource, with retries.
func (c *client) get(ctx context.Context, u string, limit int64) ([]byte, error) {
	var body []byte
	err := c.retry(ctx, u, func() error {
		resp, err := c.do(ctx, u, "")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return statusError(u, resp)
		}
		if resp.ContentLength > limit {
			return permanent(fmt.Errorf("hub: %s: %d bytes, more than the %d-byte limit for a non-weights file", u, resp.ContentLength, limit))
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
		if err != nil {
			return err
		}
		if int64(len(b)) > limit {
			return permanent(fmt.Errorf("hub: %s: more than the %d-byte limit for a non-weights file", u, limit))
		}
		c.progress(int64(len(b)))
		body = b
		return nil
	})
	return body, err
}

func (c *client) progress(n int64) {
	if c.opts.Progress != nil && n > 0 {
		c.opts.Progress(n)
	}
}

// do sends a GET (with a Range header when rng is set) and the token.
func (c *client) do(ctx context.Context, u, rng string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, permanent(fmt.Errorf("hub: %w", err))
	}
	if c.opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.opts.Token)
	}
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	req.Header.Set("User-Agent", "ggufkit")
	return c.opts.Client.Do(req)
}

// permanentError is a failure a retry cannot mend.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

func permanent(err error) error { return permanentError{err} }

// statusError describes a response that is not the one asked for; 429 and
// 5xx are worth a retry, the rest is not.
func statusError(u string, resp *http.Response) error {
	err := fmt.Errorf("hub: %s: %s", u, resp.Status)
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return permanent(fmt.Errorf("%w: %s: %s (set HF_TOKEN, or log in with `huggingface-cli login`, and accept the model's terms on the Hub if it is gated)", ErrAuth, u, resp.Status))
	case resp.StatusCode == http.StatusNotFound:
		return permanent(fmt.Errorf("%w: %s", ErrNotFound, u))
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return err
	}
	return permanent(err)
}

// retry runs fn until it succeeds, fails permanently, the context ends, or
// the retries are spent, waiting Backoff, 2·Backoff … between tries.
func (c *client) retry(ctx context.Context, what string, fn func() error) error {
	wait := c.opts.Backoff
	for attempt := 0; ; attempt++ {
		err := fn()
		if err == nil {
			return nil
		}
		var p permanentError
		if errors.As(err, &p) || ctx.Err() != nil || attempt >= c.opts.Retries {
			if attempt > 0 && !errors.As(err, &p) {
				return fmt.Errorf("hub: %s: giving up after %d tries: %w", what, attempt+1, err)
			}
			return err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
		wait *= 2
	}
}

// rangeReader is an io.ReaderAt over a remote file: each read is one range
// request (resumed where a cut transfer stopped), small reads served from a
// window read ahead.
type rangeReader struct {
	c    *client
	ctx  context.Context
	url  string
	name string
	// total is the file's size, from the first response's Content-Range.
	total int64
	// win holds the last window read ahead (a *window).
	win atomic.Pointer[window]
}

type window struct {
	off  int64
	data []byte
}

// readAhead is the smallest request a short read makes.
const readAhead = 4 << 20

func (r *rangeReader) size() (int64, error) {
	buf := make([]byte, 8)
	if _, err := r.fetch(buf, 0); err != nil {
		return 0, err
	}
	return r.total, nil
}

// ReadAt implements io.ReaderAt.
func (r *rangeReader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("hub: %s: negative offset", r.name)
	}
	if w := r.win.Load(); w != nil && off >= w.off && off+int64(len(p)) <= w.off+int64(len(w.data)) {
		return copy(p, w.data[off-w.off:]), nil
	}
	if len(p) >= readAhead || r.total == 0 {
		return r.fetch(p, off)
	}
	n := min(int64(readAhead), r.total-off)
	if n < int64(len(p)) {
		n = int64(len(p))
	}
	buf := make([]byte, n)
	got, err := r.fetch(buf, off)
	if got > 0 {
		r.win.Store(&window{off: off, data: buf[:got]})
	}
	m := copy(p, buf[:got])
	if err == nil && m < len(p) {
		err = io.EOF
	}
	return m, err
}

// fetch reads len(p) bytes at off with range requests, resuming after a
// cut transfer and retrying failures.
func (r *rangeReader) fetch(p []byte, off int64) (int, error) {
	if r.total > 0 && off+int64(len(p)) > r.total {
		if off >= r.total {
			return 0, io.EOF
		}
		n, err := r.fetch(p[:r.total-off], off)
		if err == nil {
			err = io.EOF
		}
		return n, err
	}
	got := 0
	err := r.c.retry(r.ctx, r.name, func() error {
		for got < len(p) {
			start, end := off+int64(got), off+int64(len(p))-1
			resp, err := r.c.do(r.ctx, r.url, fmt.Sprintf("bytes=%d-%d", start, end))
			if err != nil {
				return err
			}
			if resp.StatusCode != http.StatusPartialContent {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return permanent(fmt.Errorf("hub: %s: the server ignored the range request", r.url))
				}
				if resp.StatusCode == http.StatusRequestedRangeNotSatisfiable {
					return permanent(fmt.Errorf("hub: %s: bytes %d-%d are beyond the file's end", r.name, start, end))
				}
				return statusError(r.url, resp)
			}
			if err := r.checkRange(resp, start); err != nil {
				resp.Body.Close()
				return err
			}
			n, err := io.ReadFull(resp.Body, p[got:])
			resp.Body.Close()
			got += n
			r.c.progress(int64(n))
			if err != nil && got < len(p) {
				// A cut transfer: the next try resumes at got.
				return fmt.Errorf("hub: %s: transfer cut at byte %d: %w", r.name, off+int64(got), err)
			}
		}
		return nil
	})
	return got, err
}

var contentRange = regexp.MustCompile(`^bytes ([0-9]+)-([0-9]+)/([0-9]+)$`)

// checkRange checks that a 206 answer starts where asked and records the
// file's size.
func (r *rangeReader) checkRange(resp *http.Response, start int64) error {
	m := contentRange.FindStringSubmatch(resp.Header.Get("Content-Range"))
	if m == nil {
		return permanent(fmt.Errorf("hub: %s: partial answer without a usable Content-Range (%q)", r.url, resp.Header.Get("Content-Range")))
	}
	var first, total int64
	fmt.Sscan(m[1], &first)
	fmt.Sscan(m[3], &total)
	if first != start {
		return permanent(fmt.Errorf("hub: %s: asked for byte %d, got a range starting at %d", r.url, start, first))
	}
	if r.total == 0 {
		r.total = total
	} else if total != r.total {
		return permanent(fmt.Errorf("hub: %s changed size during the conversion (%d, then %d bytes)", r.name, r.total, total))
	}
	return nil
}
