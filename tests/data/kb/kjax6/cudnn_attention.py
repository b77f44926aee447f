import jax, jax.numpy as jnp
q = jnp.ones((2, 16, 4, 64), jnp.float32)
out = jax.nn.dot_product_attention(q, q, q, implementation="cudnn")
print(out.shape)
