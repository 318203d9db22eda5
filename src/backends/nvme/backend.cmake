# Real NVMe controllers through the kernel's vfio-pci (user-space driver, polled
# queues, DMA arena with IOVA = virtual address), and the sysfs helpers behind
# `bam nvme list|bind|unbind` (bam/nvme.h).
set(BAM_BACKEND_OPS bam_nvme_ops)
set(BAM_BACKEND_SOURCES nvme.c vfio.c sysfs.c)
