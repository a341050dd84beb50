package canon

import (
	"runtime"
	"runtime/debug"
)

// A caller may hand canon input that lives in a memory-mapped file. If the
// file is truncated meanwhile, reading the input faults, and a fault on a
// goroutine that canon started would end the process. So every such
// goroutine turns faults into panics (debug.SetPanicOnFault), catches
// them, and hands them back to the goroutine that called into canon, which
// panics with the fault there: a caller that sets debug.SetPanicOnFault on
// its own goroutine can recover it, whichever goroutine hit the fault.

// guard is the first call of every goroutine canon starts.
func guard() { debug.SetPanicOnFault(true) }

// catchFault, deferred, recovers a memory fault into *dst; any other panic
// goes on.
func catchFault(dst *any) {
	if r := recover(); r != nil {
		if !IsFault(r) {
			panic(r)
		}
		*dst = r
	}
}

// IsFault reports whether r, a value recovered from a panic, is a memory
// fault: with debug.SetPanicOnFault, what reading a memory-mapped file
// that was truncated causes.
func IsFault(r any) bool {
	if _, ok := r.(runtime.Error); !ok {
		return false
	}
	_, ok := r.(interface{ Addr() uintptr })
	return ok
}
