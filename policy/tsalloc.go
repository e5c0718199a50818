package policy

/*
#include <stdlib.h>

// ts_set_allocator is tree-sitter's (github.com/tree-sitter/go-tree-sitter
// links its C library into the binary).
extern void ts_set_allocator(void *(*)(size_t), void *(*)(size_t, size_t), void *(*)(void *, size_t), void (*)(void *));

static void termgate_ts_libc_allocator(void) { ts_set_allocator(malloc, calloc, realloc, free); }
*/
import "C"

import "sync"

// tsLibcAllocator makes tree-sitter allocate with the C library's malloc
// and free directly. The Go bindings route each of its allocations
// through a call back into Go (which then calls the same malloc): a
// parse makes hundreds, and each C-to-Go call costs more than the
// allocation. Done once, before the first parse; a tree allocated before
// it is freed by the same free either way.
var tsLibcAllocator = sync.OnceFunc(func() { C.termgate_ts_libc_allocator() })
