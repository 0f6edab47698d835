/*===- NoLlvmAllocatorPoisoning.h - ASan builds against a plain libMLIR -===//
 *
 * Force-included into every kiln source in AddressSanitizer builds.
 * LLVM's allocator headers poison a BumpPtrAllocator's fresh slabs and
 * unpoison each allocation when the including code is built with ASan. The
 * MLIRContext's allocators are shared between kiln's (instrumented) inline
 * copies of that code and libMLIR's (Debian's, not instrumented) copies,
 * which hand out memory without unpoisoning it: reading a DenseArrayAttr
 * that libMLIR built in a slab kiln's code had poisoned is then reported
 * as use-after-poison (KilnOptFuzzer found it). With the calls made no-ops
 * here, both sides treat the slabs alike; ASan still checks every heap
 * access, only LLVM's own slab bookkeeping goes unpoisoned.
 *===----------------------------------------------------------------------===*/
#ifndef KILN_NO_LLVM_ALLOCATOR_POISONING_H
#define KILN_NO_LLVM_ALLOCATOR_POISONING_H
#include <sanitizer/asan_interface.h>
#undef __asan_poison_memory_region
#undef __asan_unpoison_memory_region
#define __asan_poison_memory_region(addr, size) ((void)(addr), (void)(size))
#define __asan_unpoison_memory_region(addr, size) ((void)(addr), (void)(size))
#endif
