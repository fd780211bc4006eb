//go:build !unix

package writer

import "os"

// lockTemp does nothing: on Windows a file open for writing cannot be
// removed, which protects a live writer's file.
func lockTemp(*os.File) {}

// tempInUse reports false; removing a file in use fails there.
func tempInUse(string) bool { return false }
