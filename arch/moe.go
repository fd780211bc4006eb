package arch

import "fmt"

// mlpExperts stacks the per-expert MLP tensors the Hub stores as
// model.layers.{bid}.mlp.experts.{xid}.{down,gate,up}_proj.weight into
// one tensor per projection and block, the merge Qwen2MoeModel's
// modify_tensors does and the model classes that copy it (OlmoeModel,
// Dots1Model, Ernie4_5MoeModel) repeat.
type mlpExperts struct {
	stacker *expertStacker
	// wids is the order the stacked projections are written in: the
	// model class's loop order (down, gate, up when nil; Ernie4_5MoeModel
	// writes gate, up, down).
	wids []string
}

// add holds one expert tensor of block bid; countKeys are the hparams the
// model class reads the expert count from (find_hparam order).
func (e *mlpExperts) add(t *text, in Input, bid int, countKeys ...string) ([]Output, error) {
	if e.stacker == nil {
		n, err := expertCount(t.h, countKeys...)
		if err != nil {
			return nil, err
		}
		wids := e.wids
		if wids == nil {
			wids = []string{"down_proj", "gate_proj", "up_proj"}
		}
		e.stacker = newExpertStacker(n, t.blocks, wids, t.names)
	}
	return e.stacker.add(in, nil, bid, func(bid, xid int, wid string) string {
		return fmt.Sprintf("model.layers.%d.mlp.experts.%d.%s.weight", bid, xid, wid)
	}, func(bid int, wid string) string {
		return fmt.Sprintf("model.layers.%d.mlp.experts.%s.weight", bid, wid)
	})
}

// finish is prepare_tensors' "Unprocessed experts" check.
func (e *mlpExperts) finish() error { return e.stacker.finish() }

// blockSparseExperts stacks Mixtral's expert layout,
// model.layers.{bid}.block_sparse_moe.experts.{xid}.{w1,w2,w3}.weight, per
// block and projection (w1, w2, w3) under the merged name
// model.layers.{bid}.block_sparse_moe.experts.{wid}.weight, as
// MiniMaxM2Model and PhiMoeModel do.
type blockSparseExperts struct{ stacker *expertStacker }

// add holds one expert tensor of block bid; the expert count is
// num_local_experts (or num_experts).
func (e *blockSparseExperts) add(t *text, in Input, bid int) ([]Output, error) {
	if e.stacker == nil {
		n, err := expertCount(t.h, "num_local_experts", "num_experts")
		if err != nil {
			return nil, err
		}
		e.stacker = newExpertStacker(n, t.blocks, []string{"w1", "w2", "w3"}, t.names)
	}
	return e.stacker.add(in, nil, bid, func(bid, xid int, wid string) string {
		return fmt.Sprintf("model.layers.%d.block_sparse_moe.experts.%d.%s.weight", bid, xid, wid)
	}, func(bid int, wid string) string {
		return fmt.Sprintf("model.layers.%d.block_sparse_moe.experts.%s.weight", bid, wid)
	})
}

// finish is prepare_tensors' "Unprocessed experts" check.
func (e *blockSparseExperts) finish() error { return e.stacker.finish() }
