# The emulated NVMe controller: media in DRAM, GPU memory or an mmap'ed file, timing
# profiles, fault injection; GPU-resident workers on the GPU target.
set(BAM_BACKEND_OPS bam_emu_ops)
set(BAM_BACKEND_SOURCES emu.c profiles.c)
set(BAM_BACKEND_CUDA_SOURCES emu_gpu.cu)
