// Package mmap gives back the pages of read-only file mappings that a
// reader is done with, so that streaming a model through a mapping keeps
// the process's resident set bounded by the data in flight.
package mmap

// FolioSize is the span Release widens a range to. The page cache may hold
// a file in large folios (up to the PMD size, 2 MiB with 4 KiB pages, on
// Linux 6.x with large folios), and one fault maps a whole folio: reading
// one byte maps up to 2 MiB around it. Releasing only the pages a read
// covered would leave the rest of each folio mapped, and a tensor's
// neighbours in the file (read by another stack, or never) would stay in
// the resident set until the end — RSS growing with the model.
const FolioSize = 2 << 20
