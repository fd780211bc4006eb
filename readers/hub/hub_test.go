package hub

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseSpec(t *testing.T) {
	for _, tc := range []struct {
		in       string
		want     Spec
		wantFail bool
	}{
		{in: "hf:org/name", want: Spec{"org/name", "main"}},
		{in: "hf:Org-1/Na.me_2@v1.0", want: Spec{"Org-1/Na.me_2", "v1.0"}},
		{in: "hf:org/name@refs/pr/3", want: Spec{"org/name", "refs/pr/3"}},
		{in: "hf:org/name@0123456789abcdef0123456789abcdef01234567", want: Spec{"org/name", "0123456789abcdef0123456789abcdef01234567"}},
		{in: "org/name", wantFail: true},
		{in: "hf:name", wantFail: true},
		{in: "hf:org/name/extra", wantFail: true},
		{in: "hf:../name", wantFail: true},
		{in: "hf:org/..", wantFail: true},
		{in: "hf:org/name@", wantFail: true},
		{in: "hf:org/name@a/../b", wantFail: true},
		{in: "hf:org/na me", wantFail: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSpec(tc.in)
			if tc.wantFail {
				if !errors.Is(err, ErrSpec) {
					t.Fatalf("got %+v, %v; want ErrSpec", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func FuzzParseSpec(f *testing.F) {
	f.Add("hf:org/name@main")
	f.Add("hf:a/b@refs/pr/1")
	f.Fuzz(func(t *testing.T, s string) {
		sp, err := ParseSpec(s)
		if err != nil {
			return
		}
		if strings.Contains(sp.Repo, "..") || strings.Count(sp.Repo, "/") != 1 || sp.Revision == "" {
			t.Fatalf("%q parsed as %+v", s, sp)
		}
	})
}

// TestNoSafetensors: a repository with PyTorch weights only is refused
// with ErrNoSafetensors (remote conversion reads safetensors only).
func TestNoSafetensors(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"config.json": `{"architectures":["LlamaForCausalLM"]}`, "pytorch_model.bin": "x"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(http.StripPrefix("/org/m/resolve/main/", http.FileServer(http.Dir(dir))))
	defer srv.Close()
	_, err := Open(context.Background(), Spec{"org/m", "main"}, Options{Endpoint: srv.URL, CacheDir: t.TempDir(), Backoff: time.Millisecond})
	if !errors.Is(err, ErrNoSafetensors) {
		t.Fatalf("error %v, want ErrNoSafetensors", err)
	}
}
