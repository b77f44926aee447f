import jax.numpy as jnp
x = jnp.ones(3)
print(jnp.zeros(3, dtype=x))
