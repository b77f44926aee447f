from megatron.core.transformer.transformer_config import TransformerConfig

config = TransformerConfig(num_layers=2, hidden_size=64, num_attention_heads=4, fp16=True, bf16=True)
