from megatron.core.transformer.transformer_config import TransformerConfig

config = TransformerConfig(num_layers=4, hidden_size=96, num_attention_heads=6, tensor_model_parallel_size=4)
