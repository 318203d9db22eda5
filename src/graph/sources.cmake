# Sources of the graph I/O module (importers, generator, CSR file format, CPU reference).
set(BAM_GRAPH_SOURCES)
