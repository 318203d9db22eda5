# A controller without media that completes every valid command successfully (SPDK's
# null bdev, Linux's null_blk): the cost of the queues and the front end alone.
set(BAM_BACKEND_OPS bam_null_ops)
set(BAM_BACKEND_SOURCES null.c)
