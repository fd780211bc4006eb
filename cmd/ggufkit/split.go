package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/ggufkit/ggufkit/gguf"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
	"github.com/ggufkit/ggufkit/split"
)

func splitCommand() *cli.Command {
	return &cli.Command{
		Name:  "split",
		Usage: "cut a GGUF into a gguf-split set, byte-identical with llama-gguf-split --split",
		ArgsUsage: "IN.gguf OUT_PREFIX\n\n" +
			"The shards are OUT_PREFIX-00001-of-0000N.gguf … (the prefix is used as given, as llama-gguf-split\n" +
			"does). The first shard holds every metadata key; each shard gets split.no, split.tensors.count and\n" +
			"split.count. Tensor bytes are copied, not decoded. `ggufkit merge` puts a set back together.",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "split-max-tensors", Value: split.DefaultMaxTensors, Usage: "tensors per shard"},
			&cli.StringFlag{Name: "split-max-size", Usage: "most tensor bytes per shard instead: N followed by M (10^6 bytes) or G (10^9 bytes) as llama-gguf-split takes it, e.g. 4G (also K, or plain bytes)"},
			&cli.BoolFlag{Name: "no-tensor-first-split", Usage: "the first shard holds the metadata only"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print the plan and write nothing"},
			&cli.BoolFlag{Name: "force", Usage: "replace existing shards"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return cli.Exit("split: expected IN.gguf OUT_PREFIX", 2)
			}
			opts := split.Options{MaxTensors: c.Int("split-max-tensors"), NoTensorFirstSplit: c.Bool("no-tensor-first-split")}
			if c.IsSet("split-max-size") {
				if c.IsSet("split-max-tensors") {
					return cli.Exit("split: either --split-max-tensors or --split-max-size, not both", 2)
				}
				n, err := parseSplitSize(c.String("split-max-size"))
				if err == nil && n == 0 {
					err = fmt.Errorf("the size must be positive")
				}
				if err != nil {
					return cli.Exit("split: --split-max-size: "+err.Error(), 2)
				}
				opts.MaxBytes = n
			} else if opts.MaxTensors <= 0 {
				return cli.Exit("split: --split-max-tensors must be positive", 2)
			}
			in, err := ggufread.Open(c.Args().Get(0))
			if err != nil {
				return err
			}
			defer in.Close()
			out := c.App.Writer
			if v, ok := in.KV(gguf.KeySplitCount); ok {
				if n, _ := v.Int(); n > 1 {
					fmt.Fprintf(c.App.ErrWriter, "ggufkit: warning: %s is one shard of a set of %d; its split keys are replaced (merge the set first to split the whole model)\n", c.Args().Get(0), n)
				}
			}
			shards, err := split.Plan(in, c.Args().Get(1), opts)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "n_split: %d\n", len(shards))
			for i, s := range shards {
				fmt.Fprintf(out, "split %05d: n_tensors = %d, total_size = %dM\n", i+1, len(s.Tensors), (s.MetaSize+s.DataSize)/1000/1000)
			}
			if c.Bool("dry-run") {
				return nil
			}
			if err := split.Write(c.Context, in, shards, c.Bool("force")); err != nil {
				return err
			}
			for _, s := range shards {
				fmt.Fprintf(out, "wrote %s\n", s.Path)
			}
			fmt.Fprintf(out, "%d shards written with a total of %d tensors\n", len(shards), len(in.Tensors))
			return nil
		},
	}
}

func mergeCommand() *cli.Command {
	return &cli.Command{
		Name:  "merge",
		Usage: "merge a gguf-split set into one GGUF, byte-identical with llama-gguf-split --merge",
		ArgsUsage: "FIRST-00001-of-0000N.gguf OUT.gguf\n\n" +
			"Every shard of the set is read (their names follow the first's); the output has the first shard's\n" +
			"metadata with split.count set to 0, as llama-gguf-split writes it, and every tensor in shard order.\n" +
			"With --strip-split-keys the split.* keys are left out too, which gives back the bytes of the file\n" +
			"the set was cut from.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "strip-split-keys", Usage: "leave split.no, split.count and split.tensors.count out"},
			&cli.BoolFlag{Name: "dry-run", Usage: "read and check the set, write nothing"},
			&cli.BoolFlag{Name: "force", Usage: "replace an existing output"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return cli.Exit("merge: expected FIRST-00001-of-0000N.gguf OUT.gguf", 2)
			}
			opts := split.MergeOptions{DropSplitKeys: c.Bool("strip-split-keys"), Overwrite: c.Bool("force")}
			m, err := split.PlanMerge(c.Args().Get(0), opts)
			if err != nil {
				return err
			}
			out := c.App.Writer
			for _, s := range m.Shards {
				fmt.Fprintf(out, "read %s\n", s)
			}
			if c.Bool("dry-run") {
				fmt.Fprintf(out, "%d shards, %d tensors (dry run: nothing written)\n", len(m.Shards), len(m.Tensors))
				return nil
			}
			dst := c.Args().Get(1)
			if err := split.Merge(c.Context, m, dst, opts); err != nil {
				return err
			}
			fmt.Fprintf(out, "wrote %s: merged from %d shards with %d tensors\n", dst, len(m.Shards), len(m.Tensors))
			return nil
		},
	}
}
