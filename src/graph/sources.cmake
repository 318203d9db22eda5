# Sources of the graph I/O module (importers, generator, CSR file format, CPU reference).
# Paths are relative to src/ (this file is included by src/CMakeLists.txt).
set(BAM_GRAPH_SOURCES
  graph/util.c
  graph/csr_file.c
  graph/builder.c
  graph/import.c
  graph/kron.c
  graph/ref.c
)
