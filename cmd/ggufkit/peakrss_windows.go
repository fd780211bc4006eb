//go:build windows

package main

import (
	"unsafe"

	"golang.org/x/sys/windows"
)

// processMemoryCounters is psapi.h's PROCESS_MEMORY_COUNTERS.
type processMemoryCounters struct {
	cb                         uint32
	pageFaultCount             uint32
	peakWorkingSetSize         uintptr
	workingSetSize             uintptr
	quotaPeakPagedPoolUsage    uintptr
	quotaPagedPoolUsage        uintptr
	quotaPeakNonPagedPoolUsage uintptr
	quotaNonPagedPoolUsage     uintptr
	pagefileUsage              uintptr
	peakPagefileUsage          uintptr
}

var getProcessMemoryInfo = windows.NewLazySystemDLL("psapi.dll").NewProc("GetProcessMemoryInfo")

// peakRSS is the process's peak working set in bytes
// (GetProcessMemoryInfo), 0 when it cannot be read.
func peakRSS() uint64 {
	if getProcessMemoryInfo.Find() != nil {
		return 0
	}
	c := processMemoryCounters{}
	c.cb = uint32(unsafe.Sizeof(c))
	ok, _, _ := getProcessMemoryInfo.Call(uintptr(windows.CurrentProcess()), uintptr(unsafe.Pointer(&c)), uintptr(c.cb))
	if ok == 0 {
		return 0
	}
	return uint64(c.peakWorkingSetSize)
}
