// How the sluice binary's allocator, jemalloc (Debian's libjemalloc2, linked when the build's
// SLUICE_ALLOCATOR is jemalloc), gives memory back. A proxy's memory follows its connections:
// a herd of them (clients reconnecting after a deploy) is served at once, and glibc's malloc
// kept that peak for good, the freed requests' memory pinned between the connections that
// stayed (docs/benchmarks.md, "Memory per idle connection"). jemalloc keeps each size in
// pages of its own, and a background thread returns pages that have been free for a second,
// whether or not the loops allocate again; one thread, not one per CPU.
// Read by jemalloc at its start; MALLOC_CONF in the environment still overrides it.
extern "C" {
// NOLINTNEXTLINE: jemalloc looks this symbol up by name
const char* malloc_conf =
    "background_thread:true,max_background_threads:1,dirty_decay_ms:1000,muzzy_decay_ms:0";
}
