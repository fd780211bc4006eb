package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ggufkit/ggufkit/convert"
)

// loraIgnored are convert's flags that have no meaning for an adapter.
var loraIgnored = []string{"model-name", "metadata", "vocab-only", "tokenizer-pre", "split-max-tensors", "split-max-size",
	"no-tensor-first-split", "imatrix", "include-weights", "exclude-weights", "pure", "leave-output-tensor",
	"output-tensor-type", "token-embedding-type", "tensor-type"}

// runConvertLoRA is `convert --lora ADAPTER_DIR --base BASE`.
func runConvertLoRA(c *cli.Context) error {
	w := c.App.Writer
	if c.String("lora") == "" || c.String("base") == "" {
		return cli.Exit("convert: --lora ADAPTER_DIR and --base BASE go together", 2)
	}
	if c.NArg() != 0 {
		return cli.Exit("convert: --lora takes the adapter folder as its value, not a MODEL argument", 2)
	}
	for _, f := range loraIgnored {
		if c.IsSet(f) {
			return cli.Exit(fmt.Sprintf("convert: --%s does not apply to a LoRA adapter", f), 2)
		}
	}
	opts := convert.LoRAOptions{
		Base:      c.String("base"),
		OutType:   "f32", // convert_lora_to_gguf.py's default
		OutFile:   c.String("outfile"),
		DryRun:    c.Bool("dry-run"),
		Overwrite: c.Bool("force"),
	}
	if c.IsSet("outtype") {
		opts.OutType = strings.TrimSpace(c.String("outtype"))
	}
	rep, err := convert.RunLoRA(c.Context, c.String("lora"), opts)
	if err != nil {
		return err
	}
	if c.Bool("verbose") || opts.DryRun {
		for _, t := range rep.Plan {
			fmt.Fprintf(w, "[%4d/%4d] %-44s → %-7s %-18s %10s\n", t.Index+1, t.Count, t.Name, t.Type,
				shapeString(t.Shape), humanBytes(t.Bytes))
		}
	}
	verb := "wrote"
	if opts.DryRun {
		verb = "would write"
	}
	fmt.Fprintf(w, "%s %s: LoRA adapter, %s, %d tensors, %s in %.2f s\n", verb, rep.Output, rep.FileType, rep.Tensors,
		humanBytes(uint64(rep.Bytes)), rep.Duration.Seconds())
	return nil
}
