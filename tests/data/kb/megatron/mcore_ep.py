from megatron.core.transformer.transformer_config import TransformerConfig

config = TransformerConfig(num_layers=2, hidden_size=64, num_attention_heads=4, expert_model_parallel_size=2)
