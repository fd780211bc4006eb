package arch

import "fmt"

// mlpExperts stacks the per-expert MLP tensors the Hub stores as
// model.layers.{bid}.mlp.experts.{xid}.{down,gate,up}_proj.weight into
// one tensor per projection and block, the merge Qwen2MoeModel's
// modify_tensors does and the model classes that copy it (OlmoeModel,
// Dots1Model, Ernie4_5MoeModel) repeat.
type mlpExperts struct {
	stacker *expertStacker
}

// add holds one expert tensor of block bid; countKeys are the hparams the
// model class reads the expert count from (find_hparam order).
func (e *mlpExperts) add(t *text, in Input, bid int, countKeys ...string) ([]Output, error) {
	if e.stacker == nil {
		n, err := expertCount(t.h, countKeys...)
		if err != nil {
			return nil, err
		}
		e.stacker = newExpertStacker(n, t.blocks, []string{"down_proj", "gate_proj", "up_proj"}, t.names)
	}
	return e.stacker.add(in, nil, bid, func(bid, xid int, wid string) string {
		return fmt.Sprintf("model.layers.%d.mlp.experts.%d.%s.weight", bid, xid, wid)
	}, func(bid int, wid string) string {
		return fmt.Sprintf("model.layers.%d.mlp.experts.%s.weight", bid, wid)
	})
}

// finish is prepare_tensors' "Unprocessed experts" check.
func (e *mlpExperts) finish() error { return e.stacker.finish() }
