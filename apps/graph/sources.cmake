# Sources of the graph file module (CSR file format, importers, Kronecker generator, CPU
# reference). Paths are relative to apps/graph/ (included by apps/graph/CMakeLists.txt and
# by fuzz/CMakeLists.txt, which compiles them with the fuzzers' instrumentation).
set(BAM_GRAPH_SOURCES
  src/util.c
  src/csr_file.c
  src/builder.c
  src/import.c
  src/kron.c
  src/ref.c
)
