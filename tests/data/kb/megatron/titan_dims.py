from torchtitan.distributed.parallel_dims import ParallelDims

# the [parallelism] section of a job config asked for FSDP 2 x TP 2 on a 2-GPU launch
parallel_dims = ParallelDims(dp_replicate=1, dp_shard=2, cp=1, tp=2, pp=1, ep=1, world_size=2)
