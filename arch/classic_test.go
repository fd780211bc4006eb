package arch

import (
	"errors"
	"testing"
)

// TestBaichuanRefused: both Baichuan class names are refused with the
// converter's failure as the reason.
func TestBaichuanRefused(t *testing.T) {
	for _, name := range []string{"BaichuanForCausalLM", "BaiChuanForCausalLM"} {
		t.Run(name, func(t *testing.T) {
			var u *UnsupportedError
			_, err := New(hp(t, `{"architectures":["`+name+`"],"num_hidden_layers":2}`), "")
			if !errors.As(err, &u) || u.Reason != baichuanRecursion {
				t.Fatalf("New: %v, want the Baichuan refusal", err)
			}
		})
	}
}
