//go:build !unix

package requantize

// mapShard does not map files here: tensor bytes come from the reader.
func mapShard(string) ([]byte, func() error) { return nil, nil }

// releasePages has nothing to release without a map of our own.
func releasePages([]byte, int64, int64) {}
