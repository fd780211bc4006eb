package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ggufkit/ggufkit/gguf"
	"github.com/ggufkit/ggufkit/meta"
	ggufread "github.com/ggufkit/ggufkit/readers/gguf"
)

func metaCommand() *cli.Command {
	return &cli.Command{
		Name:  "meta",
		Usage: "edit a GGUF's metadata as gguf_new_metadata.py / gguf_set_metadata.py do, byte-identical with the former",
		ArgsUsage: "IN.gguf [OUT.gguf]\n\n" +
			"With OUT, a new file is written (atomically) with the edits, laid out as gguf_new_metadata.py writes it.\n" +
			"Without OUT, IN is edited: in place when only header bytes change and the header keeps its size (as\n" +
			"gguf_set_metadata.py), otherwise rewritten into a temporary file that replaces it. Tensor data is\n" +
			"copied, never decoded. Existing keys keep their position; new ones are appended.",
		Flags: []cli.Flag{
			&cli.GenericFlag{Value: &repeated{}, Name: "set", Usage: "KEY=VALUE (the key's type kept; a new key is a string) or KEY:TYPE=VALUE, TYPE = uint8 … float64, bool, string or array[TYPE] with a JSON list as VALUE (repeatable)"},
			&cli.GenericFlag{Value: &repeated{}, Name: "remove-metadata", Aliases: []string{"remove"}, Usage: "leave KEY out (repeatable)"},
			&cli.StringFlag{Name: "general-name", Usage: "general.name"},
			&cli.StringFlag{Name: "general-description", Usage: "general.description"},
			&cli.StringFlag{Name: "chat-template", Usage: "tokenizer.chat_template (replacing every tokenizer.chat_template* key)"},
			&cli.StringFlag{Name: "chat-template-file", Usage: "the chat template from a Jinja file"},
			&cli.StringFlag{Name: "chat-template-config", Usage: "the chat template from a tokenizer_config.json's chat_template string"},
			&cli.StringFlag{Name: "pre-tokenizer", Usage: "tokenizer.ggml.pre"},
			&cli.GenericFlag{Value: &repeated{}, Name: "special-token", Usage: "NAME=TEXT: tokenizer.ggml.NAME_token_id = the first token whose text is TEXT (NAME: bos, eos, eot, eom, unknown, seperator, padding, mask, fim_pre … — gguf-py's names) (repeatable)"},
			&cli.GenericFlag{Value: &repeated{}, Name: "special-token-by-id", Usage: "NAME=ID: tokenizer.ggml.NAME_token_id = ID (repeatable)"},
			&cli.UintFlag{Name: "alignment", Usage: "set general.alignment and lay the data out with it (a power of 2)"},
			&cli.GenericFlag{Value: &repeated{}, Name: "rename-tensor", Usage: "OLD=NEW (repeatable)"},
			&cli.GenericFlag{Value: &repeated{}, Name: "drop-tensor", Usage: "leave tensor NAME out (repeatable)"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print the resulting metadata and write nothing"},
			&cli.BoolFlag{Name: "force", Usage: "replace an existing OUT"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() < 1 || c.NArg() > 2 {
				return cli.Exit("meta: expected IN.gguf [OUT.gguf]", 2)
			}
			in, err := ggufread.Open(c.Args().Get(0))
			if err != nil {
				return err
			}
			defer in.Close()
			edits, err := metaEdits(c, in)
			if err != nil {
				return err
			}
			r, err := meta.Plan(in, edits)
			if err != nil {
				return err
			}
			out := c.App.Writer
			if c.Bool("dry-run") {
				for _, kv := range r.KVs {
					fmt.Fprintf(out, "%s: %s = %s\n", kv.Key, typeName(kv.Value), shortValue(kv.Value))
				}
				fmt.Fprintf(out, "%d keys, %d tensors, %d bytes (dry run: nothing written)\n", len(r.KVs), len(r.Tensors), r.Size)
				return nil
			}
			if c.NArg() == 2 {
				dst := c.Args().Get(1)
				if err := meta.Write(c.Context, in, r, dst, c.Bool("force")); err != nil {
					return err
				}
				fmt.Fprintf(out, "wrote %s: %d keys, %d tensors, %d bytes\n", dst, len(r.KVs), len(r.Tensors), r.Size)
				return nil
			}
			inPlace, err := meta.Apply(c.Context, in, r)
			if err != nil {
				return err
			}
			how := "rewrote"
			if inPlace {
				how = "edited in place"
			}
			fmt.Fprintf(out, "%s %s: %d keys, %d tensors, %d bytes\n", how, c.Args().Get(0), len(r.KVs), len(r.Tensors), r.Size)
			return nil
		},
	}
}

// metaEdits gathers the flags into edits, the keys in gguf_new_metadata.py's
// order: name, description, pre-tokenizer, --set, special tokens.
func metaEdits(c *cli.Context, in *ggufread.File) (meta.Edits, error) {
	var e meta.Edits
	usage := func(format string, args ...any) error { return cli.Exit("meta: "+fmt.Sprintf(format, args...), 2) }
	for _, f := range []struct{ flag, key string }{
		{"general-name", gguf.KeyGeneralName},
		{"general-description", gguf.KeyGeneralDescription},
		{"pre-tokenizer", gguf.KeyTokenizerPre},
	} {
		if c.String(f.flag) != "" {
			e.Set = append(e.Set, gguf.KV{Key: f.key, Value: gguf.String(c.String(f.flag))})
		}
	}
	for _, spec := range repeatedValues(c, "set") {
		kv, err := meta.ParseKV(in, spec)
		if err != nil {
			return e, err
		}
		e.Set = append(e.Set, kv)
	}
	for _, spec := range repeatedValues(c, "special-token") {
		name, text, ok := strings.Cut(spec, "=")
		if !ok {
			return e, usage("--special-token %q is not NAME=TEXT", spec)
		}
		ids, err := meta.TokenIDs(in, text)
		if err != nil {
			return e, err
		}
		if len(ids) > 1 {
			fmt.Fprintf(c.App.ErrWriter, "ggufkit: warning: %d tokens %q (%v); the first is taken, --special-token-by-id picks another\n", len(ids), text, ids)
		}
		kv, err := meta.SpecialToken(in, name, ids[0])
		if err != nil {
			return e, err
		}
		e.Set = append(e.Set, kv)
	}
	for _, spec := range repeatedValues(c, "special-token-by-id") {
		name, text, ok := strings.Cut(spec, "=")
		id, err := strconv.ParseInt(text, 10, 64)
		if !ok || err != nil {
			return e, usage("--special-token-by-id %q is not NAME=ID", spec)
		}
		kv, err := meta.SpecialToken(in, name, id)
		if err != nil {
			return e, err
		}
		e.Set = append(e.Set, kv)
	}
	e.Remove = repeatedValues(c, "remove-metadata")
	template, err := chatTemplate(c)
	if err != nil {
		return e, err
	}
	e.ChatTemplate = template
	if a := c.Uint("alignment"); a != 0 {
		if a > 1<<30 {
			return e, usage("--alignment %d is too large", a)
		}
		e.Alignment = uint32(a)
	}
	for _, spec := range repeatedValues(c, "rename-tensor") {
		old, name, ok := strings.Cut(spec, "=")
		if !ok {
			return e, usage("--rename-tensor %q is not OLD=NEW", spec)
		}
		if e.Rename == nil {
			e.Rename = map[string]string{}
		}
		e.Rename[old] = name
	}
	e.Drop = repeatedValues(c, "drop-tensor")
	return e, nil
}

// chatTemplate reads the template of --chat-template, -file or -config (the
// last of gguf_new_metadata.py's order that is given wins, as there).
func chatTemplate(c *cli.Context) (*string, error) {
	var t *string
	if s := c.String("chat-template"); s != "" {
		if strings.HasPrefix(s, "[") {
			return nil, cli.Exit("meta: a JSON list of named chat templates is not supported (gguf-py writes their names in a random order)", 2)
		}
		t = &s
	}
	if p := c.String("chat-template-config"); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("meta: %w", err)
		}
		var cfg struct {
			ChatTemplate json.RawMessage `json:"chat_template"`
		}
		if err := json.Unmarshal(b, &cfg); err != nil {
			return nil, fmt.Errorf("meta: %s: %w", p, err)
		}
		var s string
		if len(cfg.ChatTemplate) > 0 && string(cfg.ChatTemplate) != "null" {
			if err := json.Unmarshal(cfg.ChatTemplate, &s); err != nil {
				return nil, fmt.Errorf("meta: %s: chat_template is not a string (named templates are not supported)", p)
			}
		}
		if s != "" {
			t = &s
		}
	}
	if p := c.String("chat-template-file"); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("meta: %w", err)
		}
		// Python's text mode reads \r\n and \r as \n.
		s := strings.ReplaceAll(strings.ReplaceAll(string(b), "\r\n", "\n"), "\r", "\n")
		t = &s
	}
	return t, nil
}

// typeName is a value's type as gguf_dump.py names it: uint32, [string] …
func typeName(v gguf.Value) string {
	if v.IsArray() {
		return "[" + v.ElemType().String() + "]"
	}
	return v.Type().String()
}

// shortValue prints a value, an array by its first items.
func shortValue(v gguf.Value) string {
	if !v.IsArray() {
		if s, ok := v.Str(); ok {
			b, _ := json.Marshal(s)
			if len(b) > 80 {
				return string(b[:77]) + "..."
			}
			return string(b)
		}
		return fmt.Sprint(v.Any())
	}
	s := fmt.Sprint(v.Any())
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return fmt.Sprintf("%s (%d items)", s, v.Len())
}

// repeated is a repeatable flag's values, each taken whole (a StringSlice
// would cut a JSON list at its commas).
type repeated []string

func (r *repeated) Set(s string) error { *r = append(*r, s); return nil }
func (r *repeated) String() string     { return strings.Join(*r, " ") }

// repeatedValues returns the values given to a repeated flag.
func repeatedValues(c *cli.Context, name string) []string {
	if r, ok := c.Generic(name).(*repeated); ok && r != nil {
		return *r
	}
	return nil
}
