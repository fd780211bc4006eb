package verify

import (
	"context"
	"testing"
)

// TestCheckpointReferenceKimiLinear verifies kimilinear's Q8_0 conversion
// against its checkpoint mapped through the conversion plan (the KDA
// convolutions reshaped to 4-D, A_log turned into −exp(A_log), the experts
// stacked): every tensor within Q8_0's limits and the forward passes of the
// two in agreement.
func TestCheckpointReferenceKimiLinear(t *testing.T) {
	dir := assembleFixture(t, "kimilinear")
	q8 := open(t, convertTo(t, dir, "q8_0"))
	ref, err := OpenCheckpoint(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	rep := run(t, q8, ref, Options{Prompt: "Kimi delta attention", NPredict: 8})
	fw := rep.Forward
	if !rep.OK || fw == nil || len(rep.Tensors) == 0 {
		t.Fatalf("OK %v, forward %+v, %d tensors compared, problems %v", rep.OK, fw, len(rep.Tensors), rep.Problems)
	}
	t.Logf("Q8_0 vs checkpoint: KL mean %.3g (limit %.3g), top-1 %.3f", fw.KLMean, fw.KLLimit, fw.Top1)
}
