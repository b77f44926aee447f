from megatron.core.num_microbatches_calculator import init_num_microbatches_calculator

init_num_microbatches_calculator(rank=0, rampup_batch_size=None, global_batch_size=30, micro_batch_size=4, data_parallel_size=2)
