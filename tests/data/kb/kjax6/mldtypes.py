import jax.numpy as jnp
print(jnp.ones(2))
