//go:build !linux

package indexer

import "unsafe"

// adviseHuge is a no-op off linux (see hugepage_linux.go).
func adviseHuge(unsafe.Pointer, uintptr) {}
