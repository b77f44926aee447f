# The module Megatron-LM (megatron/training/utils.py, optimizer grad clipping) imports from apex's build
import amp_C

multi_tensor_l2norm = amp_C.multi_tensor_l2norm
