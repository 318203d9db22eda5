# Files and block devices as NVMe controllers, served by host threads with io_uring.
set(BAM_BACKEND_OPS bam_file_ops)
set(BAM_BACKEND_SOURCES file.c)
set(BAM_BACKEND_LIBS PkgConfig::URING)
