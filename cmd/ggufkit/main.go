// Command ggufkit converts Hugging Face checkpoints to GGUF, requantizes GGUF
// files like llama-quantize, and verifies conversions. Each subcommand lives
// in its own file; this one wires them together.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/ggufkit/ggufkit/writer"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// exitError carries an exit status other than 1 (e.g. verify's 2).
type exitError struct {
	code   int
	err    error
	silent bool // the status says it all (diff's "different")
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func newApp(stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:            "ggufkit",
		Usage:           "convert checkpoints to GGUF, requantize GGUF files, verify conversions",
		Version:         version,
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		Commands: []*cli.Command{
			convertCommand(),
			diffCommand(),
			imatrixCommand(),
			inspectCommand(),
			mergeCommand(),
			metaCommand(),
			quantizeCommand(),
			perplexityCommand(),
			splitCommand(),
			tokenizeCommand(),
			verifyCommand(),
		},
		// Errors are printed once, by main.
		ExitErrHandler: func(*cli.Context, error) {},
	}
}

// run executes the app and returns the process exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := newApp(stdout, stderr).RunContext(ctx, args)
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) && ee.silent {
		return ee.code
	}
	fmt.Fprintf(stderr, "ggufkit: %v\n", err)
	if errors.Is(err, writer.ErrExists) {
		fmt.Fprintln(stderr, "ggufkit: add --force to replace it")
	}
	if errors.As(err, &ee) {
		return ee.code
	}
	var ce cli.ExitCoder
	if errors.As(err, &ce) && ce.ExitCode() != 0 {
		return ce.ExitCode()
	}
	return 1
}

func main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		signal.Stop(sigs) // a second signal kills at once
		cancel(signalError{s})
	}()
	ctx = writer.WithStaleReporter(ctx, func(path string) {
		fmt.Fprintf(os.Stderr, "ggufkit: removed %s, left behind by an interrupted run\n", path)
	})
	code := run(ctx, os.Args, os.Stdout, os.Stderr)
	signal.Stop(sigs)
	var se signalError
	if errors.As(context.Cause(ctx), &se) {
		code = se.status()
	}
	os.Exit(code)
}

// signalError is the cause of a run stopped by SIGINT or SIGTERM.
type signalError struct{ sig os.Signal }

func (e signalError) Error() string { return "interrupted by " + e.sig.String() }

// status is the shell's exit status for a process ended by the signal:
// 128 + its number (130 for SIGINT, 143 for SIGTERM).
func (e signalError) status() int {
	if n, ok := e.sig.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return 1
}
